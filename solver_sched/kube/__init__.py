"""The Kubernetes adapters: the only package that talks to an API server.

watch (informers -> store) -> snapshot -> run_cycle (the pure core) -> actuate (binds, evictions,
status, events). Everything here is I/O around the core, never policy.
"""
