"""The ConfigMap as the live config: validated on every change, the last good one kept."""

from __future__ import annotations

import logging
from collections.abc import Callable

import yaml

from solver_sched.config.schema import ConfigError, SchedulerConfig, config_from_mapping
from solver_sched.kube.store import ObjectStore

log = logging.getLogger(__name__)
CONFIG_KEY = "config.yaml"


class ConfigSource:
    def __init__(
        self,
        store: ObjectStore,
        namespace: str,
        name: str,
        on_error: Callable[[str, str], None],
        on_reload: Callable[[], None] = lambda: None,
    ) -> None:
        self.store, self.namespace, self.name = store, namespace, name
        self.on_error = on_error  # (configmap key, message) -> event + metric
        self.on_reload = on_reload
        self.current = SchedulerConfig()  # until the ConfigMap is read (run --config sets it)
        self._version: str | None = None
        self.errors = 0

    def refresh(self) -> SchedulerConfig:
        obj = self.store.get("ConfigMap.v1", f"{self.namespace}/{self.name}")
        version = None if obj is None else str(obj["metadata"].get("resourceVersion"))
        if version == self._version:
            return self.current
        self._version = version
        if obj is None:
            log.info(
                "ConfigMap %s/%s not found: keeping the current config", self.namespace, self.name
            )
            return self.current
        source = f"ConfigMap {self.namespace}/{self.name}"
        try:
            text = (obj.get("data") or {}).get(CONFIG_KEY, "")
            try:
                data = yaml.safe_load(text) if text else {}
            except yaml.YAMLError as exc:
                raise ConfigError(f"{source}: data.{CONFIG_KEY}: not YAML: {exc}") from None
            self.current = config_from_mapping(data, f"{source} data.{CONFIG_KEY}")
        except ConfigError as exc:
            self.errors += 1
            log.error("invalid config, keeping the last good one: %s", exc)
            self.on_error(f"{self.namespace}/{self.name}", str(exc))
            return self.current
        self.on_reload()
        log.info("config loaded from %s (resourceVersion %s)", source, version)
        return self.current
