#!/usr/bin/env python3
"""The kustomizations under deploy/kubernetes build, checked without kubectl and, when a kubectl
binary happens to exist, with it too.

Without kubectl (the rules kustomize's file loader enforces, api/internal/loader/fileloader.go):
  * every resource a kustomization lists exists;
  * a listed directory has a kustomization.yaml, and neither it nor anything it lists in turn is
    equal to or an ancestor of a kustomization directory on the way to it (kustomize: "cycle
    detected: candidate root '<dir>' contains visited root '<dir>'"), so `..` is never allowed;
  * a listed file lies in or below its kustomization's directory (kustomize's default load
    restrictor refuses anything else);
  * no object (kind, namespace, name) comes twice out of one root.
With kubectl: `kubectl kustomize <root>` for every root succeeds and gives exactly the objects of
the files the walk above collected, field for field, after the `images:` rewrite.

Usage: check_kustomize.py <manifest dir> [kubectl]
Prints one line per check ("ok: ..." / "FAIL: ..."); exit 1 when any check fails.
"""
import os
import subprocess
import sys

import yaml

from checks import Checks  # this directory (sys.path[0])

NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def kustomization_file(d):
    return next((os.path.join(d, n) for n in NAMES if os.path.isfile(os.path.join(d, n))), None)


def contains(outer, inner):
    """outer is inner or an ancestor of it."""
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


class Walk:
    def __init__(self, top, check):
        self.top, self.check = top, check

    def rel(self, p):
        return os.path.relpath(p, self.top)

    def build(self, root, chain=()):
        """(files, images) of the kustomization at root, reached through chain (visited roots)."""
        chain = chain + (root,)
        kf = kustomization_file(root)
        with open(kf) as fh:
            k = yaml.safe_load(fh) or {}
        files, images = [], list(k.get("images", []))
        for r in k.get("resources", []) + k.get("bases", []) + k.get("components", []):
            p = os.path.normpath(os.path.join(root, r))
            where = f"{self.rel(kf)}: resource {r}"
            if not os.path.exists(p):
                self.check(f"{where} exists", False, f"{self.rel(p)} does not exist")
                continue
            if os.path.isdir(p):
                cyc = [v for v in chain if contains(p, v)]
                self.check(f"{where} is a directory that contains no kustomization on the way to it",
                           not cyc, f"cycle: candidate root {self.rel(p)} contains visited root {self.rel(cyc[0]) if cyc else ''}")
                if cyc:
                    continue
                ok = kustomization_file(p) is not None
                self.check(f"{where} has a kustomization.yaml", ok)
                if ok:
                    f, i = self.build(p, chain)
                    files += f
                    images += i
            else:
                self.check(f"{where} is a file in or below {self.rel(root)}", contains(root, p),
                           f"{self.rel(p)} is outside {self.rel(root)}")
                files.append(p)
        return files, images


def load_objects(paths):
    out = []
    for p in paths:
        with open(p) as fh:
            out += [d for d in yaml.safe_load_all(fh) if d]
    return out


def key(o):
    return (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])


def apply_images(obj, images):
    """kustomize's images transformer on the pod templates: name[:tag] -> newName:newTag."""
    spec = obj.get("spec", {}).get("template", {}).get("spec", {})
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        name, _, tag = c["image"].partition(":")
        for img in images:
            if img["name"] == name:
                c["image"] = f"{img.get('newName', name)}:{img.get('newTag', tag)}"
    return obj


def main():
    top = os.path.realpath(sys.argv[1])
    kubectl = sys.argv[2] if len(sys.argv) > 2 else None
    check = Checks()

    roots = sorted(d for d, _, _ in os.walk(top) if kustomization_file(d))
    check(f"kustomization roots: {[os.path.relpath(r, top) for r in roots]}", bool(roots))
    walk = Walk(top, check)
    for root in roots:
        name = os.path.relpath(root, top)
        files, images = walk.build(root)
        objs = [apply_images(o, images) for o in load_objects(files)]
        keys = [key(o) for o in objs]
        check(f"{name}: {len(objs)} objects from {len(files)} files, none twice "
              f"({', '.join(k for k, _, _ in keys)})", len(set(keys)) == len(keys) and objs)
        if not kubectl:
            continue
        r = subprocess.run([kubectl, "kustomize", root], capture_output=True, text=True)
        check(f"kubectl kustomize {name} succeeds", r.returncode == 0, r.stderr.strip())
        if r.returncode != 0:
            continue
        built = {key(o): o for o in yaml.safe_load_all(r.stdout) if o}
        want = {key(o): o for o in objs}
        check(f"kubectl kustomize {name}: the same {len(built)} objects as the files",
              set(built) == set(want), f"only built {sorted(set(built) - set(want))}, "
              f"only in files {sorted(set(want) - set(built))}")
        diff = [k for k in set(built) & set(want) if built[k] != want[k]]
        check(f"kubectl kustomize {name}: every object equal to its file (images rewritten)", not diff,
              f"differ: {sorted(diff)}")
    return check.finish("all kustomize checks passed")


if __name__ == "__main__":
    sys.exit(main())
