#!/usr/bin/env python3
"""The peers, once per machine (bench/gpu.sh runs this): causal-conv1d with its backward (.peers/peers.py's
with_bwd=True build) and flash-linear-attention, from the carried .peers/, installed into CACHE/site (outside
the repository; CACHE/site/READY marks it done, so a warm machine skips this). A .peers/prebuilt_site.tar.xz
written by --pack on the same torch is unpacked instead of building (about 90 s on 16 cores).

    python bench/peer_cache.py --peers .peers --cache /tmp/aiter_lite_peers [--pack FILE]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tarfile
import time
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peers", type=Path, default=Path(".peers"), help="folder with peers.py and the packages")
    ap.add_argument("--cache", type=Path, required=True, help="where the built peers stay (outside git)")
    ap.add_argument("--pack", type=Path, help="also write the built site to this .tar.xz")
    args = ap.parse_args(argv)
    site, ready = args.cache / "site", args.cache / "site" / "READY"
    if not ready.is_file():
        unpack_prebuilt(args.peers / "prebuilt_site.tar.xz", args.cache)
    if ready.is_file():
        print(f"peers: cached in {site} ({ready.read_text().strip()})")
        return pack(site, args.pack)
    if not (args.peers / "peers.py").is_file():
        print(f"peers: no {args.peers}/peers.py (carry .peers, see bench/README.md); running without peers")
        return 1
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(args.cache / "torch_extensions"))
    sys.path.insert(0, str(args.peers))
    import peers  # noqa: PLC0415

    t0 = time.time()
    peers.fla_causal_conv1d(root=str(args.peers), site=str(site))
    dao, build_s = peers.dao_causal_conv1d(root=str(args.peers), work=str(args.cache / "dao"), with_bwd=True)
    ext_module = sys.modules["causal_conv1d_cuda"]
    if ext_module.__name__ != "causal_conv1d_cuda":  # torch renamed it (_v1...) after an older build there
        print(f"peers: built as {ext_module.__name__}; remove {args.cache} and run again", file=sys.stderr)
        return 1
    ext = Path(ext_module.__file__)
    shutil.copy(ext, site / f"causal_conv1d_cuda{ext.suffix}")  # the name the package imports
    shutil.copytree(Path(dao.__file__).parent, site / "causal_conv1d", dirs_exist_ok=True)
    ready.write_text(f"causal-conv1d with backward built in {build_s:.0f} s, fla installed; {time.time() - t0:.0f} s\n")
    print(f"peers: {ready.read_text().strip()}, in {site}")
    return pack(site, args.pack)


def torch_tag() -> str:
    import torch  # noqa: PLC0415

    return f"torch {torch.__version__}"


def unpack_prebuilt(archive: Path, cache: Path) -> None:
    """Unpack a site packed by --pack when it was built against this torch (its TORCH file says which)."""
    if not archive.is_file():
        return
    with tarfile.open(archive) as tar:
        tag = tar.extractfile("site/TORCH").read().decode().strip()
        if tag != torch_tag():
            print(f"peers: {archive} was built for {tag}, not {torch_tag()}; building")
            return
        tar.extractall(cache, filter="data")
    print(f"peers: unpacked {archive}")


def pack(site: Path, archive) -> int:
    if archive is not None:
        (site / "TORCH").write_text(torch_tag() + "\n")
        with tarfile.open(archive, "w:xz") as tar:
            tar.add(site, arcname="site")
        print(f"peers: packed {site} into {archive} ({archive.stat().st_size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
