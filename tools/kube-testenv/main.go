// Command kube-testenv runs a real kube-apiserver backed by an embedded etcd
// in one process, on loopback only, for solver-sched's integration tests.
//
// Both components are compiled in from Go modules (k8s.io/kubernetes and
// go.etcd.io/etcd/server/v3), so no Docker and no downloaded binaries are
// needed. When ready it prints one JSON line to stdout:
//
//	{"kubeconfig": "...", "server": "https://127.0.0.1:PORT", "token": "...", "dir": "..."}
//
// Logs go to stderr. SIGTERM/SIGINT stops the apiserver, then etcd, and the
// process exits 0. A second signal kills the process immediately.
//
// No controller-manager, scheduler or kubelet runs: pods stay Pending, deletes
// of bound pods need gracePeriodSeconds=0, namespaces never finish deleting,
// and PDB status is never computed, so tests must set such state themselves.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/grpc/grpclog"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

const (
	readyTimeout     = 60 * time.Second // for /readyz, as testserver budgets
	namespaceTimeout = 60 * time.Second // the default namespace is made by a post-start hook
	shutdownTimeout  = 60 * time.Second // apiserver drain before we give up and close etcd anyway
	adminUser        = "admin"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, " ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type config struct {
	dir        string
	port       int
	token      string
	verbosity  int
	extraUsers stringList // "user=token" pairs, plain authenticated users for RBAC tests
	extraArgs  stringList // raw kube-apiserver flags appended last (they win)
}

func main() {
	var cfg config
	flag.StringVar(&cfg.dir, "dir", "", "work dir for etcd data, certs and kubeconfig (default: a new temp dir, removed on exit)")
	flag.IntVar(&cfg.port, "port", 0, "apiserver secure port on 127.0.0.1 (0 = pick a free port)")
	flag.StringVar(&cfg.token, "token", "", "static bearer token of the admin user (group system:masters); default random")
	flag.IntVar(&cfg.verbosity, "v", 0, "kube-apiserver klog verbosity")
	flag.Var(&cfg.extraUsers, "extra-user", "extra static-token user as NAME=TOKEN (no groups besides system:authenticated); repeatable")
	flag.Var(&cfg.extraArgs, "apiserver-arg", "extra kube-apiserver flag, e.g. --apiserver-arg=--watch-cache=false; repeatable")
	flag.Parse()

	quietGRPC(cfg.verbosity)
	if err := run(cfg); err != nil {
		fmt.Fprintf(os.Stderr, "kube-testenv: %v\n", err)
		os.Exit(1)
	}
}

// quietGRPC drops gRPC's warnings unless -v>=4. k8s.io/apiserver routes them
// to klog, and at startup the etcd clients it opens and cancels for probing
// log dozens of harmless "operation was canceled" warnings. Errors are kept.
// This runs in main, after package inits and before any gRPC use.
func quietGRPC(verbosity int) {
	if verbosity < 4 {
		grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, os.Stderr))
	}
}

func run(cfg config) error {
	// The first SIGINT/SIGTERM cancels ctx; stop() then restores the default
	// handler so that a second signal kills us outright.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }()

	dir, cleanup, err := prepareDir(cfg.dir)
	if err != nil {
		return err
	}
	defer cleanup()

	if cfg.token == "" {
		if cfg.token, err = randomToken(); err != nil {
			return err
		}
	}

	etcd, err := startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer etcd.Close()

	saKey, tokenFile, err := writeCredentials(dir, cfg.token, cfg.extraUsers)
	if err != nil {
		return err
	}

	// Bind the listener ourselves: no free-port race, and a busy --port
	// fails here with a clear error.
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	certDir := filepath.Join(dir, "pki")

	args := apiserverArgs(cfg, etcd.url, certDir, saKey, tokenFile)
	apiCtx, cancelAPI := context.WithCancel(context.Background())
	defer cancelAPI()
	apiDone := startAPIServer(apiCtx, args, ln)

	start := time.Now()
	caFile := filepath.Join(certDir, "apiserver.crt") // serving cert + its self-signed CA
	// A signal during startup does not abort the wait: cancelling the
	// apiserver before its post-start hooks finish makes them klog.Fatal
	// (exit 255). So finish starting, then shut down normally.
	if err := waitReady(server, caFile, cfg.token, apiDone); err != nil {
		cancelAPI()
		waitAPI(apiDone)
		return err
	}
	klog.InfoS("kube-testenv ready", "server", server, "elapsed", time.Since(start).Round(time.Millisecond))
	if ctx.Err() != nil {
		return shutdown(cancelAPI, apiDone)
	}

	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, server, caFile, cfg.token); err != nil {
		cancelAPI()
		waitAPI(apiDone)
		return err
	}
	if err := announce(kubeconfig, server, cfg.token, dir); err != nil {
		return err
	}

	select {
	case <-ctx.Done():
		return shutdown(cancelAPI, apiDone) // then deferred etcd.Close(), cleanup()
	case err := <-apiDone:
		return fmt.Errorf("kube-apiserver exited unexpectedly: %v", err)
	case err := <-etcd.Err():
		cancelAPI()
		waitAPI(apiDone)
		return fmt.Errorf("etcd failed: %w", err)
	}
}

// shutdown stops the apiserver and waits for it to drain; etcd is closed
// afterwards by the caller's defer, so the apiserver never loses storage
// while it is still serving.
func shutdown(cancelAPI context.CancelFunc, apiDone <-chan error) error {
	fmt.Fprintln(os.Stderr, "kube-testenv: shutting down")
	cancelAPI()
	if err := waitAPI(apiDone); err != nil {
		fmt.Fprintf(os.Stderr, "kube-testenv: apiserver shutdown: %v\n", err)
	}
	return nil
}

// prepareDir creates the work dir; a temp dir we created is removed on exit,
// a dir given by the caller is kept for inspection.
func prepareDir(dir string) (string, func(), error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "kube-testenv-")
		if err != nil {
			return "", nil, err
		}
		return d, func() { os.RemoveAll(d) }, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", nil, err
	}
	return abs, func() {}, nil
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// freePort asks the kernel for a free loopback port. etcd binds its own
// listeners, so a small race remains; startEtcd retries on failure.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// etcdServer is the embedded etcd plus a handle on its log level.
type etcdServer struct {
	*embed.Etcd
	url   string
	level zap.AtomicLevel
}

// Close stops etcd. Its listeners log "server closed" errors with stack
// traces while stopping; that is expected, so silence the logger first.
func (e *etcdServer) Close() {
	e.level.SetLevel(zap.FatalLevel)
	e.Etcd.Close()
}

// startEtcd runs a single-member etcd on loopback, tuned for tests the same
// way k8s.io/apiserver's etcd3 testserver does (no fsync, error-level logs).
func startEtcd(dataDir string) (*etcdServer, error) {
	level := zap.NewAtomicLevelAt(zap.ErrorLevel)
	zcfg := zap.NewProductionConfig()
	zcfg.Level = level
	zcfg.OutputPaths = []string{"stderr"}
	zcfg.ErrorOutputPaths = []string{"stderr"}
	logger, err := zcfg.Build()
	if err != nil {
		return nil, err
	}

	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		clientPort, err := freePort()
		if err != nil {
			return nil, err
		}
		peerPort, err := freePort()
		if err != nil {
			return nil, err
		}
		clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
		peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}

		cfg := embed.NewConfig()
		cfg.Dir = dataDir
		cfg.UnsafeNoFsync = true
		cfg.LogLevel = "error"
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logger)
		cfg.ListenClientUrls = []url.URL{clientURL}
		cfg.AdvertiseClientUrls = []url.URL{clientURL}
		cfg.ListenPeerUrls = []url.URL{peerURL}
		cfg.AdvertisePeerUrls = []url.URL{peerURL}
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
		// Kubernetes relies on progress notifications for consistent reads
		// from the watch cache; etcd's default of 10m is far too slow.
		cfg.WatchProgressNotifyInterval = 5 * time.Second

		e, err := embed.StartEtcd(cfg)
		if err != nil {
			lastErr = err
			continue // most likely a lost port race: try new ports
		}
		srv := &etcdServer{Etcd: e, url: clientURL.String(), level: level}
		select {
		case <-e.Server.ReadyNotify():
			return srv, nil
		case err := <-e.Err():
			srv.Close()
			lastErr = err
		case <-time.After(60 * time.Second):
			e.Server.Stop()
			srv.Close()
			return nil, errors.New("not ready after 60s")
		}
	}
	return nil, lastErr
}

// writeCredentials writes the service-account key (one ECDSA P-256 key
// serves as both signing and verification key, as in k8s's testserver) and
// the static token file. An existing key is kept, so a reused --dir keeps
// previously issued SA tokens valid.
func writeCredentials(dir, adminToken string, extraUsers []string) (saKey, tokenFile string, err error) {
	saKey = filepath.Join(dir, "sa.key")
	if _, statErr := os.Stat(saKey); statErr != nil {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return "", "", err
		}
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return "", "", err
		}
		pemBytes := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
		if err := os.WriteFile(saKey, pemBytes, 0o600); err != nil {
			return "", "", err
		}
	}

	// CSV rows: token,user,uid,"group1,group2".
	var b strings.Builder
	fmt.Fprintf(&b, "%s,%s,%s,\"system:masters\"\n", adminToken, adminUser, adminUser)
	for _, u := range extraUsers {
		name, token, ok := strings.Cut(u, "=")
		if !ok || name == "" || token == "" || strings.ContainsAny(u, ",\"\n") {
			return "", "", fmt.Errorf("bad --extra-user %q, want NAME=TOKEN", u)
		}
		fmt.Fprintf(&b, "%s,%s,%s\n", token, name, name)
	}
	tokenFile = filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(b.String()), 0o600); err != nil {
		return "", "", err
	}
	return saKey, tokenFile, nil
}

// apiserverArgs are ordinary kube-apiserver flags, so they stay stable
// across Kubernetes versions. Why each non-obvious one is set:
//   - advertise-address: with no default route the apiserver cannot pick an
//     address and fails to start; loopback is then rejected by the
//     `kubernetes` Endpoints validation, hence endpoint-reconciler-type=none.
//   - ServiceAccount admission is off: no token controller creates the
//     `default` ServiceAccount, so pod creation would be rejected.
//   - TaintNodesByCondition admission is off: it taints every new Node
//     not-ready:NoSchedule and only the (absent) node-lifecycle controller
//     would remove it.
func apiserverArgs(cfg config, etcdURL, certDir, saKey, tokenFile string) []string {
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(cfg.port), // informational; the pre-bound listener wins
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + certDir,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.0.0.0/16",
		"--authorization-mode=RBAC",
		"--token-auth-file=" + tokenFile,
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--runtime-config=api/all=true",
		// The 1.37 gang API: scheduling.k8s.io/v1beta1 Workload and PodGroup, pods'
		// spec.schedulingGroup, and PodGroup spec.schedulingConstraints.topology.
		"--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true",
		"--allow-privileged=true",
		"--profiling=false",
		"--v=" + strconv.Itoa(cfg.verbosity),
	}
	return append(args, cfg.extraArgs...)
}

// startAPIServer runs kube-apiserver in-process the way its cobra command
// does, but with our own context (NewAPIServerCommand installs a signal
// handler that os.Exit(1)s on a second signal) and a pre-bound listener.
// The returned channel yields the server's result once and is then closed.
func startAPIServer(ctx context.Context, args []string, ln net.Listener) <-chan error {
	done := make(chan error, 1)
	go func() {
		defer close(done)
		done <- runAPIServer(ctx, args, ln)
	}()
	return done
}

func runAPIServer(ctx context.Context, args []string, ln net.Listener) error {
	s := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	s.SecureServing.Listener = ln
	s.SecureServing.BindPort = ln.Addr().(*net.TCPAddr).Port

	// Same sequence as the cobra command's PersistentPreRunE and RunE.
	registry := s.GenericServerRunOptions.ComponentGlobalsRegistry
	if err := registry.Set(); err != nil {
		return err
	}
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	featureGate := registry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	if err := logsapi.ValidateAndApply(s.Logs, featureGate); err != nil {
		return err
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		return err
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return utilerrors.NewAggregate(errs)
	}
	featureGate.(featuregate.MutableFeatureGate).AddMetrics()
	registry.AddMetrics()
	return app.Run(ctx, completed)
}

// waitAPI waits for the apiserver goroutine to finish draining.
func waitAPI(done <-chan error) error {
	select {
	case err := <-done:
		return err
	case <-time.After(shutdownTimeout):
		return fmt.Errorf("still running after %s", shutdownTimeout)
	}
}

// waitReady polls /readyz (covers etcd and post-start hooks such as RBAC
// bootstrap and system priority classes), then waits for the `default`
// namespace, which a bootstrap controller creates shortly after.
func waitReady(server, caFile, token string, apiDone <-chan error) error {
	deadline := time.Now().Add(readyTimeout)
	var client *http.Client
	poll := func(path string, until time.Time) error {
		var last string
		for {
			select {
			case err := <-apiDone:
				return fmt.Errorf("kube-apiserver exited during startup: %v", err)
			default:
			}
			if time.Now().After(until) {
				return fmt.Errorf("timed out waiting for %s (last: %s)", path, last)
			}
			if client == nil {
				// The serving cert appears during option completion.
				client, _ = httpClient(caFile)
			}
			if client != nil {
				status, body, err := get(client, server+path, token)
				if err == nil && status == http.StatusOK {
					return nil
				}
				last = fmt.Sprintf("%d %v %.200s", status, err, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := poll("/readyz", deadline); err != nil {
		return err
	}
	return poll("/api/v1/namespaces/default", time.Now().Add(namespaceTimeout))
}

func httpClient(caFile string) (*http.Client, error) {
	pemBytes, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("no certificates in %s", caFile)
	}
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}, nil
}

func get(c *http.Client, u, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	return resp.StatusCode, string(buf[:n]), nil
}

// writeKubeconfig embeds the CA so TLS is verified (127.0.0.1 is a SAN of
// the self-signed serving cert) and authenticates with the admin token.
func writeKubeconfig(path, server, caFile, token string) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kube-testenv"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	kc.AuthInfos[adminUser] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["kube-testenv"] = &clientcmdapi.Context{Cluster: "kube-testenv", AuthInfo: adminUser, Namespace: "default"}
	kc.CurrentContext = "kube-testenv"
	return clientcmd.WriteToFile(*kc, path)
}

// announce prints the single JSON line the test fixture waits for.
func announce(kubeconfig, server, token, dir string) error {
	line, err := json.Marshal(map[string]string{
		"kubeconfig": kubeconfig,
		"server":     server,
		"token":      token,
		"dir":        dir,
	})
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(os.Stdout, "%s\n", line); err != nil {
		return err
	}
	_ = os.Stdout.Sync() // a no-op error on pipes is fine; os.Stdout is unbuffered
	return nil
}
