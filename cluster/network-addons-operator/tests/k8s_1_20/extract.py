#!/usr/bin/env python3
"""Writes api-1.20.json: the fields Kubernetes 1.20 knows for every kind the operator writes, and
the keys of each associative list (what server-side apply merges by), from the swagger.json of the
Kubernetes 1.20.2 source tree (Debian's `kubernetes` source package, api/openapi-spec/).

    python3 extract.py <kubernetes source tree>/api/openapi-spec/swagger.json > api-1.20.json

A field entry is {} (a scalar or an opaque value), {"ref": D} (an object of definition D),
{"map": D} (a map whose values are D), or {"items": D or null, "keys": [...]} (a list; "keys"
only for an associative list, with the fields server-side apply identifies an element by,
per the 1.20 rule: x-kubernetes-list-type map with its list-map-keys, else
x-kubernetes-patch-strategy merge with its patch-merge-key).
"""
import json
import sys

ROOTS = [
    ("", "v1", "Namespace"),
    ("", "v1", "ServiceAccount"),
    ("", "v1", "ConfigMap"),
    ("", "v1", "Service"),
    ("networking.k8s.io", "v1", "NetworkPolicy"),
    ("", "v1", "Event"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io", "v1", "Role"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
    ("apps", "v1", "DaemonSet"),
    ("apps", "v1", "Deployment"),
    ("policy", "v1beta1", "PodDisruptionBudget"),
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
]


def ref_name(prop):
    ref = prop.get("$ref")
    return ref.split("/")[-1] if ref else None


def main():
    swagger = json.load(open(sys.argv[1]))
    defs = swagger["definitions"]
    roots = {}
    for name, d in defs.items():
        for gvk in d.get("x-kubernetes-group-version-kind", []):
            key = (gvk["group"], gvk["version"], gvk["kind"])
            if key in ROOTS:
                api_version = f"{key[0]}/{key[1]}" if key[0] else key[1]
                roots[f"{api_version} {key[2]}"] = name
    missing = [r for r in ROOTS if f"{r[0] + '/' if r[0] else ''}{r[1]} {r[2]}" not in roots]
    assert not missing, missing

    out = {}
    todo = list(roots.values())
    while todo:
        name = todo.pop()
        if name in out:
            continue
        d = defs[name]
        if "properties" not in d:
            out[name] = {"opaque": True}
            continue
        fields = {}
        for field, prop in sorted(d["properties"].items()):
            entry = {}
            if ref_name(prop):
                entry["ref"] = ref_name(prop)
            elif prop.get("type") == "array":
                entry["items"] = ref_name(prop.get("items", {}))
                list_type = prop.get("x-kubernetes-list-type")
                strategy = prop.get("x-kubernetes-patch-strategy", "")
                if list_type == "map":
                    entry["keys"] = prop["x-kubernetes-list-map-keys"]
                elif list_type is None and strategy in ("merge", "merge,retainKeys"):
                    if "x-kubernetes-patch-merge-key" in prop:
                        entry["keys"] = [prop["x-kubernetes-patch-merge-key"]]
            elif prop.get("type") == "object" and "additionalProperties" in prop:
                entry["map"] = ref_name(prop["additionalProperties"])
            fields[field] = entry
            for k in ("ref", "items", "map"):
                if entry.get(k):
                    todo.append(entry[k])
        out[name] = {"fields": fields}
    json.dump({"source": "Kubernetes v1.20.2 api/openapi-spec/swagger.json",
               "roots": dict(sorted(roots.items())),
               "definitions": dict(sorted(out.items()))},
              sys.stdout, indent=None, separators=(",", ":"), sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
