#!/usr/bin/env bash
# Builds the CPU image (the Dockerfile's runtime stage) without a container engine or a registry:
# a Debian bookworm root file system from debootstrap (Debian's packages only), the service's user
# made in it as the Dockerfile makes it, the offline bundle laid out with `bundle.js --dir` (what the
# Dockerfile's build stage copies), then imported with buildah and written as an OCI archive.
#
#   sudo apt-get install debootstrap buildah          # Debian 12
#   npm ci && sudo bash deploy/image/build-cpu.sh [OUT.tar]   # default build/image/catcomfort-oci.tar
#   sudo bash deploy/image/build-cpu.sh --check       # also: start the image's file system as uid 10001, wait for /readyz, predict the example cat
#
# Load the archive where an engine is: `podman load -i OUT.tar`, `skopeo copy oci-archive:OUT.tar
# docker://REGISTRY/catcomfort:1.0.0`, or `docker load` after `skopeo copy ... docker-archive:`.
# Needs root (debootstrap, chroot, buildah's storage), the network for Debian's packages, and this
# checkout installed (`npm ci`: dist/, build/Release, the model files). Uses buildah's vfs storage
# driver, which works without overlay mounts. deploy/README.md "Building the CPU image without an engine".
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)

check=false
out=build/image/catcomfort-oci.tar
for arg in "$@"; do
  case "$arg" in
    --check) check=true ;;
    *) out=$arg ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "build-cpu.sh: run as root (debootstrap, chroot, buildah)" >&2; exit 1; }
for tool in debootstrap buildah; do
  command -v "$tool" > /dev/null || { echo "build-cpu.sh: $tool is not installed (apt-get install $tool)" >&2; exit 1; }
done
[ -f dist/src/tools/bundle.js ] || { echo "build-cpu.sh: run npm ci first (dist/ is missing)" >&2; exit 1; }

# The Dockerfile's runtime stage, read from the Dockerfile so the two cannot drift apart.
uid=$(sed -n 's/.*useradd .*--uid \([0-9]*\) .*/\1/p' Dockerfile)
data_dir=$(sed -n 's/.*CATCOMFORT_DATA_DIR=\([^ ]*\).*/\1/p' Dockerfile)
port=$(sed -n 's/.*CATCOMFORT_PORT=\([0-9]*\).*/\1/p' Dockerfile)
[ -n "$uid" ] && [ -n "$data_dir" ] && [ -n "$port" ] || { echo "build-cpu.sh: cannot read uid, data folder or port from the Dockerfile" >&2; exit 1; }

work=$(mktemp -d /var/tmp/catcomfort-image.XXXXXX)
export STORAGE_DRIVER=vfs BUILDAH_ISOLATION=chroot
ctr=
cleanup() {
  if [ -n "$ctr" ]; then buildah rm "$ctr" > /dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

rootfs=$work/rootfs
echo "build-cpu.sh: debootstrap bookworm (minbase, with libjemalloc2: the malloc the launcher preloads) into $rootfs"
debootstrap --variant=minbase --include=libjemalloc2 bookworm "$rootfs" > "$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
# As the Dockerfile's runtime stage: the unprivileged user and its data folder.
chroot "$rootfs" useradd --system --user-group --uid "$uid" --create-home --home-dir /var/lib/catcomfort --shell /usr/sbin/nologin catcomfort
install -d -o "$uid" -g "$uid" "$rootfs$data_dir"
# What an image does not need: package lists and caches, documentation.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/var/log/*.log

echo "build-cpu.sh: the bundle into $rootfs/opt/catcomfort"
node dist/src/tools/bundle.js --dir "$rootfs/opt"

echo "build-cpu.sh: buildah import"
ctr=$(buildah from scratch)
# Copied into the mounted container with owners and modes kept (buildah copy would make all root's).
tar -C "$rootfs" --numeric-owner -cf - . | tar -C "$(buildah mount "$ctr")" --numeric-owner -xpf -
buildah umount "$ctr" > /dev/null
buildah config \
  --env PATH=/opt/catcomfort:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env CATCOMFORT_HOST=0.0.0.0 --env "CATCOMFORT_PORT=$port" --env "CATCOMFORT_DATA_DIR=$data_dir" \
  --user catcomfort --workingdir /var/lib/catcomfort --volume "$data_dir" --port "$port" \
  --cmd '["/opt/catcomfort/run"]' \
  --label org.opencontainers.image.title=catcomfort \
  --label "org.opencontainers.image.version=$(node -p 'require("./package.json").version')" \
  "$ctr"
image=localhost/catcomfort:latest
buildah commit --quiet --rm "$ctr" "$image" > /dev/null
ctr=
mkdir -p "$(dirname "$out")"
rm -f "$out"
buildah push --quiet "$image" "oci-archive:$out:catcomfort:latest"
echo "build-cpu.sh: wrote $out ($(du -h "$out" | cut -f1)); image $image in buildah's storage"

if [ "$check" = true ]; then
  # The image's configuration as the Dockerfile's runtime stage sets it.
  config=$(buildah inspect --type image --format '{{.OCIv1.Config.User}} {{.OCIv1.Config.Cmd}} {{.OCIv1.Config.WorkingDir}} {{.OCIv1.Config.Env}}' "$image")
  for want in "catcomfort [/opt/catcomfort/run] /var/lib/catcomfort " "CATCOMFORT_PORT=$port" "CATCOMFORT_DATA_DIR=$data_dir" "PATH=/opt/catcomfort:"; do
    case "$config" in *"$want"*) ;; *) echo "build-cpu.sh: check: the image's configuration lacks '$want': $config" >&2; exit 1 ;; esac
  done
  # The image's own file system, run as its user with its settings; what a container would run.
  ctr=$(buildah from "$image")
  mnt=$(buildah mount "$ctr")
  mount -t proc proc "$mnt/proc"
  mount --bind /dev "$mnt/dev"
  mount -t tmpfs tmpfs "$mnt/tmp"
  check_port=${CHECK_PORT:-18090}
  log=$work/check.log
  setsid chroot --userspec="$uid:$uid" "$mnt" env -i HOME=/var/lib/catcomfort PATH=/opt/catcomfort:/usr/bin:/bin \
    CATCOMFORT_HOST=127.0.0.1 CATCOMFORT_PORT="$check_port" CATCOMFORT_DATA_DIR="$data_dir" \
    CATCOMFORT_API_KEYS=check-key-0123456789abcdef CATCOMFORT_DRAIN_DELAY_MS=0 \
    /opt/catcomfort/run > "$log" 2>&1 &
  pid=$!
  ready=false
  for _ in $(seq 1 600); do
    if curl -fsS --max-time 5 -o /dev/null "http://127.0.0.1:$check_port/readyz" 2> /dev/null; then ready=true; break; fi
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.1
  done
  answer=''
  if [ "$ready" = true ]; then
    # A detected cat from the running image: the README's example photo through /v2/predict.
    answer=$({ printf '{"image":"'; base64 -w0 models/example-cat.jpg; printf '"}'; } |
      curl -sS --max-time 60 "http://127.0.0.1:$check_port/v2/predict" -H 'api-key: check-key-0123456789abcdef' \
        -H 'content-type: application/json' --data-binary @- 2>&1 || true)
  fi
  kill -TERM -- "-$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  umount "$mnt/tmp" "$mnt/dev" "$mnt/proc"
  buildah umount "$ctr" > /dev/null
  if [ "$ready" = true ]; then
    case "$answer" in
      *'"detection":"detected"'*) echo "build-cpu.sh: check: the image's file system as uid $uid answered GET /readyz 200 and found the cat in models/example-cat.jpg" ;;
      *) echo "build-cpu.sh: check: ready, but /v2/predict did not find the cat: $answer" >&2; exit 1 ;;
    esac
  else
    echo "build-cpu.sh: check: not ready; its output:" >&2
    tail -20 "$log" >&2
    exit 1
  fi
fi
