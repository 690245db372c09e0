# The two commands of the quick start: `make run` (the live demo on a local API server) and
# `make test` (lint + the whole suite). Both install what they need first: Python packages pinned
# in pyproject.toml into .venv, and the Go-built kube-apiserver + etcd into .cache/bin.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NOW := 2026-01-01T12:00:00Z
SEEDS := gang-8-on-5 elastic-fill guaranteed-preempts-elastic cooldown quota-max-jobs topology-rack budget-protects-victim host-ports

GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
TESTENV := .cache/bin/kube-testenv
TESTENV_SRC := tools/kube-testenv/main.go tools/kube-testenv/go.mod tools/kube-testenv/go.sum
# The release the binaries report at /version (Kueue refuses to start on the unstamped
# v0.0.0-master a plain `go build` of k8s.io/kubernetes reports).
K8S_VERSION := v1.37.2
K8S_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
  -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 \
  -X k8s.io/component-base/version.gitTreeState=clean
# The Kubeflow training-operator v1.8.1 (it runs the PyTorchJobs of both demo scenes and of the
# fleet tests' members), its upstream main built from the module; its CRDs are copied from the
# same module.
OPERATOR := .cache/bin/training-operator
OPERATOR_SRC := tools/training-operator/go.mod tools/training-operator/go.sum
OPERATOR_PKG := github.com/kubeflow/training-operator/cmd/training-operator.v1
# The live study's stage (benchmarks/live): kube-scheduler and kube-controller-manager of the same
# k8s.io/kubernetes v1.37.2 as kube-testenv (tool directives in its module: one dependency set,
# one build cache), KWOK v0.8.0 (fake nodes and pod lifecycle) and Kueue v0.17.0, each pinned in
# its own tools/<name> module. KWOK's Stages and Kueue's CRDs are copied from their modules.
KUBE_BINS := .cache/bin/kube-scheduler .cache/bin/kube-controller-manager
KWOK := .cache/bin/kwok
KWOK_SRC := tools/kwok/go.mod tools/kwok/go.sum
KUEUE := .cache/bin/kueue
KUEUE_SRC := tools/kueue/go.mod tools/kueue/go.sum
STAGE_BINS := $(KUBE_BINS) $(KWOK) $(KUEUE)

.PHONY: run whatif test lint unit install testenv operator stage clean mutation

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	touch $(STAMP)

install: $(STAMP)

# A real kube-apiserver + etcd, compiled from Go modules; rebuilt only when its sources change.
$(TESTENV): $(TESTENV_SRC)
	mkdir -p $(dir $(TESTENV))
	cd tools/kube-testenv && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(K8S_LDFLAGS)' -o ../../$(TESTENV) .

testenv: $(TESTENV)

$(OPERATOR): $(OPERATOR_SRC)
	mkdir -p $(dir $(OPERATOR)) .cache/crds
	cd tools/training-operator && CGO_ENABLED=0 $(GO) build -trimpath -o ../../$(OPERATOR) $(OPERATOR_PKG)
	cd tools/training-operator && cp "$$($(GO) list -m -f '{{.Dir}}' github.com/kubeflow/training-operator)/manifests/base/crds/kubeflow.org_pytorchjobs.yaml" \
	  "$$($(GO) list -m -f '{{.Dir}}' sigs.k8s.io/scheduler-plugins)/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml" ../../.cache/crds/
	chmod u+w .cache/crds/*.yaml

operator: $(OPERATOR)

$(KUBE_BINS) &: $(TESTENV_SRC)
	mkdir -p $(dir $(TESTENV))
	cd tools/kube-testenv && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(K8S_LDFLAGS)' -o ../../.cache/bin/ \
	  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager
	touch $(KUBE_BINS)

$(KWOK): $(KWOK_SRC)
	mkdir -p $(dir $(KWOK)) .cache/kwok
	cd tools/kwok && CGO_ENABLED=0 $(GO) build -trimpath -o ../../$(KWOK) sigs.k8s.io/kwok/cmd/kwok
	cd tools/kwok && d="$$($(GO) list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage" && \
	  cp $$d/node/fast/node-initialize.yaml $$d/pod/fast/pod-ready.yaml $$d/pod/fast/pod-complete.yaml \
	    $$d/pod/fast/pod-delete.yaml ../../.cache/kwok/
	chmod u+w .cache/kwok/*.yaml

$(KUEUE): $(KUEUE_SRC)
	mkdir -p $(dir $(KUEUE)) .cache/crds/kueue
	cd tools/kueue && CGO_ENABLED=0 $(GO) build -trimpath -o ../../$(KUEUE) sigs.k8s.io/kueue/cmd/kueue
	cd tools/kueue && cp "$$($(GO) list -m -f '{{.Dir}}' sigs.k8s.io/kueue)"/config/components/crd/bases/*.yaml \
	  ../../.cache/crds/kueue/
	chmod u+w .cache/crds/kueue/*.yaml

stage: $(TESTENV) $(OPERATOR) $(STAGE_BINS)

run: $(STAMP) $(TESTENV) $(OPERATOR)
	$(BIN)/solver-sched demo --testenv $(TESTENV) --operator $(OPERATOR)

whatif: $(STAMP)
	@for s in $(SEEDS); do \
	  echo; echo "=== models/$$s.yaml"; sed -n '/^#/!q;s/^# \{0,1\}/  /p' models/$$s.yaml; echo; \
	  $(BIN)/solver-sched whatif models/$$s.yaml --now $(NOW) || exit $$?; \
	done

# lint-imports checks the import contracts (layers, the pure core) in pyproject.toml.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy solver_sched benchmarks tests
	$(BIN)/lint-imports --no-cache --no-logo

unit: $(STAMP)
	$(BIN)/pytest -m "not integration"

test: lint $(TESTENV) $(OPERATOR) $(STAGE_BINS)
	$(BIN)/pytest

# Mutation testing (mutmut, pinned in pyproject.toml's `mutation` extra; not part of `make test`:
# minutes). MUTATE picks the package: the rules by default, or e.g. MUTATE=solver_sched.solvers.
# The last line is `mutation score: K/N killed`.
MUTATE ?= solver_sched.formulation.rules
MUTATION_JOBS ?= 2
mutation: $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,bench,mutation]'
	rm -rf mutants && mkdir -p .cache
	nice $(BIN)/mutmut run --max-children $(MUTATION_JOBS) "$(MUTATE).*" > .cache/mutmut.log 2>&1 \
	  || (tail -40 .cache/mutmut.log; exit 1)
	$(BIN)/python tools/mutation_score.py $(MUTATE)

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache .import_linter_cache mutants
