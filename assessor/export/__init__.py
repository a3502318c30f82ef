"""Results in the shapes fleet engines read (docs/FLEET_ENGINES.md).

One module per engine: Prometheus metrics from a results document (:mod:`.prometheus`) and the endpoint
that serves them (:mod:`.serve`); node-problem-detector's custom-plugin verdict (:mod:`.npd`); the
Kubernetes manifests (:mod:`.k8s`) and the node labels a pod sets through the API (:mod:`.nodes`).
"""
