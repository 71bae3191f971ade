#!/usr/bin/env python3
"""Render istiod's MutatingWebhookConfigurations from Istio's own Helm chart, offline.

    python3 tools/render_istiod_webhooks.py CHART_DIR VALUES_JSON

CHART_DIR is an `istio-discovery` chart (../shared/conformance/istio/releases/<tag>/chart/
istio-discovery); VALUES_JSON the Helm values as JSON (`{}`, `{"revision": "canary"}`,
`{"revisionTags": ["prod"]}`, `{"global": {"operatorManageWebhooks": true}}`). Renders the chart
as `helm install istiod CHART -n istio-system` would (release istiod, namespace istio-system)
with Helm's Go SDK (PyPI helm-python-sdk; no helm binary, no cluster) and prints the
MutatingWebhookConfiguration objects as one JSON array, in the chart's template order.
Exit status 3 when helm-python-sdk or PyYAML is missing (tests report that as a missing tool).
"""
import json
import sys

try:
    import helm_python as helm
    import yaml
except ImportError as e:  # pragma: no cover - the caller reports the missing tool
    print(f"missing Python module: {e.name} (pip install helm-python-sdk pyyaml)", file=sys.stderr)
    sys.exit(3)


def main():
    chart_dir, values = sys.argv[1], json.loads(sys.argv[2])
    chart = helm.Chart.load(chart_dir)
    rendered = chart.render(values, name="istiod", namespace="istio-system", is_install=True)
    out = []
    for path in sorted(p for p in rendered if p.endswith(".yaml")):
        for doc in yaml.safe_load_all(rendered[path]):
            if isinstance(doc, dict) and doc.get("kind") == "MutatingWebhookConfiguration":
                out.append(doc)
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
