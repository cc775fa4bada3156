"""Make every base image the compose file needs available to the Docker engine in DOCKER_HOST.

For each line of ``images``: an image already present is used as it is; a missing one is pulled;
where no registry answers, a stand-in is built from Debian packages and tagged with the official
name: ``mmdebstrap`` makes a bookworm root file system (once, cached as
``halfmq-standin/bookworm``) and the line's recipe adds the image's own packages.

The stand-ins must reach the package registries the way this machine does, so its apt sources and
options and its pip configuration (with the CA bundle it names) are copied into the root file
system at build time; none of that is kept in the repository.

Usage: python3 docker/standins/build.py [IMAGE ...]   (default: every image in ``images``)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE = "halfmq-standin/bookworm"
STANDIN_LABEL = "org.halfmq.standin"
PULL_TIMEOUT = 30.0
PIP_CA_IN_IMAGE = "/etc/pip-ca-bundle.crt"
ROOTFS = ["--variant=minbase", "--include=ca-certificates", "--dpkgopt=force-unsafe-io", "bookworm"]  # unsafe-io: as in the official images


def recipes() -> dict[str, str]:
    """``images`` as {official image name: recipe (a Dockerfile here, or apt:<packages>)}."""
    table = {}
    for line in (HERE / "images").read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        if fields:
            image, recipe = fields
            table[image] = recipe
    return table


def docker(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], env={**os.environ, "DOCKER_BUILDKIT": "0"}, **kwargs)


def labels_of(image: str) -> dict[str, str] | None:
    """The image's labels, or None when the engine does not have it."""
    found = docker("image", "inspect", "--format", "{{json .Config.Labels}}", image, capture_output=True, text=True)
    if found.returncode != 0:
        return None
    return json.loads(found.stdout) or {}


def pulled(image: str) -> bool:
    try:
        return docker("pull", "--quiet", image, capture_output=True, timeout=PULL_TIMEOUT).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def apt_sources() -> list[str]:
    paths = [Path("/etc/apt/sources.list")] + sorted(Path("/etc/apt/sources.list.d").glob("*"))
    return [str(p) for p in paths if p.is_file() and p.suffix in (".list", ".sources") and re.search(r"^\s*[^#\s]", p.read_text(), re.M)]


def apt_options() -> list[str]:
    return [str(p) for p in sorted(Path("/etc/apt/apt.conf.d").glob("*")) if p.is_file()]


def pip_settings() -> dict[str, str]:
    """This machine's effective pip settings (files and PIP_* variables), less paths that exist only here."""
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    settings = {}
    for line in listed.stdout.splitlines():
        match = re.fullmatch(r"[^.]*\.([\w-]+)='(.*)'", line.strip())
        if not match:
            continue
        key, value = match.groups()
        if key != "cert" and any(v.startswith(("file:", "/")) for v in value.split()):
            continue  # local indexes and wheel directories of this machine
        settings[key] = value
    return settings


def host_configuration() -> tuple[list[str], list[str], dict[str, str]]:
    return apt_sources(), apt_options(), pip_settings()


def base_tag(sources: list[str], options: list[str], pip: dict[str, str]) -> str:
    """The base image's tag: a digest of everything copied into it, so a changed machine gets a new base."""
    digest = hashlib.sha256()
    for path in sources + options + [pip.get("cert", "")]:
        if path and Path(path).is_file():
            digest.update(path.encode() + Path(path).read_bytes())
    digest.update(repr((sorted(pip.items()), ROOTFS, PIP_CA_IN_IMAGE)).encode())
    return f"{BASE}:{digest.hexdigest()[:12]}"


def build_base() -> None:
    sources, options, pip = host_configuration()
    tag = base_tag(sources, options, pip)
    if labels_of(tag) is not None:
        docker("tag", tag, BASE, check=True)
        return
    print(f"standins: building {tag} with mmdebstrap", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        hooks = []
        if pip:
            cert = pip.pop("cert", None)
            if cert:
                hooks.append(f"upload {cert} {PIP_CA_IN_IMAGE}")
                pip["cert"] = PIP_CA_IN_IMAGE
            (Path(tmp) / "pip.conf").write_text("[global]\n" + "".join(f"{k} = {v}\n" for k, v in sorted(pip.items())))
            hooks.append(f"upload {tmp}/pip.conf /etc/pip.conf")
        hooks.append('rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin')
        argv = ["mmdebstrap", "--quiet", *[f"--aptopt={path}" for path in options], *[f"--customize-hook={hook}" for hook in hooks]]
        argv += [*ROOTFS, "-", *sources]
        rootfs = subprocess.Popen(argv, stdout=subprocess.PIPE)
        docker("import", "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "--change", 'CMD ["bash"]', "-", tag, stdin=rootfs.stdout, check=True, stdout=subprocess.DEVNULL)
        if rootfs.wait() != 0:
            raise SystemExit(f"mmdebstrap failed ({rootfs.returncode})")
    docker("tag", tag, BASE, check=True)


def build_standin(image: str, recipe: str) -> None:
    build_base()
    if recipe.startswith("apt:"):
        dockerfile, args = "packages.Dockerfile", ["--build-arg", f"PACKAGES={recipe[4:].replace(',', ' ')}"]
    else:
        dockerfile, args = recipe, []
    built = docker("build", *args, "--label", f"{STANDIN_LABEL}={recipe}", "-t", image, "-f", str(HERE / dockerfile), str(HERE),
                   capture_output=True, text=True)
    if built.returncode != 0:
        raise SystemExit(f"building the stand-in {image} failed:\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}")


def ensure(image: str, recipe: str) -> str:
    """Make ``image`` available; returns how: present, pulled or stand-in."""
    labels = labels_of(image)
    if labels is not None and STANDIN_LABEL not in labels:
        return "present"
    if labels is None and pulled(image):
        return "pulled"
    build_standin(image, recipe)  # also refreshes a stand-in whose recipe changed (layer cache otherwise)
    return "stand-in"


def main(argv: list[str]) -> int:
    table = recipes()
    for image in argv or list(table):
        started = time.monotonic()
        how = ensure(image, table[image])
        print(f"standins: {image}: {how} ({time.monotonic() - started:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
