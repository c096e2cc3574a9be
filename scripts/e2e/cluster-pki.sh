# shellcheck shell=bash
# Certificates and kubeconfigs of cluster.sh (sourced), made with openssl under $PKI and $KCFG:
# one CA signs every serving and client certificate; the service-account key pair signs tokens.
#
#   apiserver                serving, for 127.0.0.1, the node IP, the service IP and kubernetes.*
#   admin                    client, system:masters (the tests' KUBECONFIG)
#   apiserver-kubelet-client client, system:masters: the apiserver calling the kubelet (logs, exec)
#   controller-manager, scheduler  clients with their stock RBAC identities
#   kubelet-client           client, system:node:$NODE in system:nodes (the Node authorizer)
#   kubelet                  serving, for the node IP and name (the apiserver checks it)

# pki_cert NAME SUBJECT EXTENDED_KEY_USAGE [SUBJECT_ALT_NAMES]
pki_cert() {
  local name=$1 subj=$2 eku=$3 san=${4:-}
  openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/$name.key" -out "$PKI/$name.csr" \
    -subj "$subj" 2>/dev/null
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [ -z "$san" ] || echo "subjectAltName=$san"
  } >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 365 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

make_pki() {
  local service_ip=${SERVICE_RANGE%.*}.1
  e2e_log "creating certificates in $PKI"
  mkdir -p "$PKI"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$PKI/ca.key" -out "$PKI/ca.crt" \
    -subj /CN=vgpu-e2e-ca -days 3650 2>/dev/null
  pki_cert apiserver /CN=kube-apiserver serverAuth \
    "IP:127.0.0.1,IP:$NODE_IP,IP:$service_ip,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  pki_cert admin /O=system:masters/CN=vgpu-e2e-admin clientAuth
  pki_cert apiserver-kubelet-client /O=system:masters/CN=kube-apiserver-kubelet-client clientAuth
  pki_cert controller-manager /CN=system:kube-controller-manager clientAuth
  pki_cert scheduler /CN=system:kube-scheduler clientAuth
  pki_cert kubelet-client "/O=system:nodes/CN=system:node:$NODE" clientAuth
  pki_cert kubelet "/CN=$NODE" serverAuth "IP:$NODE_IP,DNS:$NODE"
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  chmod 600 "$PKI"/*.key
}

# make_kubeconfig NAME: $KCFG/NAME.kubeconfig with certificate NAME, everything embedded so the
# file works wherever it is copied.
make_kubeconfig() {
  mkdir -p "$KCFG"
  cat >"$KCFG/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: vgpu-e2e
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$1.crt")
    client-key-data: $(base64 -w0 "$PKI/$1.key")
contexts:
- name: vgpu-e2e
  context:
    cluster: vgpu-e2e
    user: $1
current-context: vgpu-e2e
EOF
  chmod 600 "$KCFG/$1.kubeconfig"
}
