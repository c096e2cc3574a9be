# OCI images without a container engine, with Debian's umoci: sourced by images/build.sh
# (`make images`) and scripts/e2e/images.sh. An image is built in a work folder DIR holding the
# layout DIR/oci (its one image tagged "img") and that image unpacked as a bundle in DIR/bundle
# (root filesystem DIR/bundle/rootfs). Needs root (umoci unpack keeps owners) and jq.
#
# With SOURCE_DATE_EPOCH set, the layers' history and the config's "created" carry that time
# instead of now, and the archive's tar entries are sorted and dated with it.

# The time to record: SOURCE_DATE_EPOCH in RFC 3339, or nothing.
oci_created() {
  [ -n "${SOURCE_DATE_EPOCH:-}" ] && date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ
  return 0
}

# oci_start DIR [LAYOUT]: DIR/oci is a copy of the OCI layout LAYOUT (whose image is tagged
# "img"), or a new image with no layers; DIR/bundle is that image unpacked.
oci_start() {
  rm -rf "$1" && mkdir -p "$1"
  if [ -n "${2:-}" ]; then
    cp -a "$2" "$1/oci"
  else
    umoci init --layout "$1/oci"
    umoci new --image "$1/oci:img"
  fi
  umoci unpack --image "$1/oci:img" "$1/bundle" >/dev/null
}

# oci_layer DIR [COMMENT]: adds what changed in the bundle since it was unpacked (or last
# layered) to the image as one new layer.
oci_layer() {
  local created
  created=$(oci_created)
  umoci repack --refresh-bundle --image "$1/oci:img" ${2:+--history.comment "$2"} \
    ${created:+--history.created "$created"} "$1/bundle"
}

# oci_finish DIR REF OUT_TAR UMOCI_CONFIG_ARGS...: layers what the bundle gained, sets the
# config (umoci config arguments), names the image REF in the index (io.containerd.image.name,
# which `ctr images import` uses as the name, and org.opencontainers.image.ref.name, which
# skopeo's oci-archive: transport reads) and writes the layout as a tar; removes DIR.
oci_finish() {
  local dir=$1 ref=$2 out=$3 created
  shift 3
  created=$(oci_created)
  oci_layer "$dir"
  umoci config --image "$dir/oci:img" ${created:+--created "$created"} \
    ${created:+--history.created "$created"} "$@"
  umoci gc --layout "$dir/oci"
  jq --arg ref "$ref" '.manifests[0].annotations = {"io.containerd.image.name": $ref,
    "org.opencontainers.image.ref.name": $ref}' "$dir/oci/index.json" >"$dir/index.json"
  mv "$dir/index.json" "$dir/oci/index.json"
  mkdir -p "$(dirname "$out")"
  tar -C "$dir/oci" --sort=name --owner=0 --group=0 --numeric-owner \
    ${SOURCE_DATE_EPOCH:+--mtime=@$SOURCE_DATE_EPOCH} -cf "$out.tmp" . && mv "$out.tmp" "$out"
  rm -rf "$dir"
}
