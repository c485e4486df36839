# Kubernetes, live (sourced by check-live.sh): etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler on loopback, kwok for the nodes (no kubelet: nothing runs in a pod, no image is pulled),
# then the chart installed as docs/deploy.md installs it. What only a kubelet could show (probes, fsGroup,
# a read-only root, the NetworkPolicy) stays a rendered-manifest assertion in test/deploy/*.spec.ts.

# kube_start: the control plane on free loopback ports, state in a temp folder; exports KUBECONFIG.
kube_start() {
  local w etcd_port peer_port api_port kwok_port token
  w="$(mktemp -d)"
  { read -r etcd_port; read -r peer_port; read -r api_port; read -r kwok_port; } < <(free_port 4)
  token="$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')"
  on_exit "stop_pids $w/kwok.pid $w/kube-scheduler.pid $w/kube-controller-manager.pid $w/kube-apiserver.pid $w/etcd.pid; rm -rf $w"

  "$ETCD_BIN" --name cg --data-dir "$w/etcd" --unsafe-no-fsync --log-level warn \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "cg=http://127.0.0.1:$peer_port" >"$CG_LOGS/etcd.log" 2>&1 &
  echo $! >"$w/etcd.pid"

  # One static token for every component (system:masters); the service-account key signs nothing that leaves.
  printf '%s,cg-admin,cg-admin,system:masters\n' "$token" >"$w/tokens.csv"
  openssl genrsa -out "$w/sa.key" 2048 2>/dev/null
  "$KUBE_DIR/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" --cert-dir "$w/pki" \
    --token-auth-file "$w/tokens.csv" --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$w/sa.key" --service-account-signing-key-file "$w/sa.key" \
    --service-cluster-ip-range 10.96.0.0/16 --endpoint-reconciler-type none >"$CG_LOGS/kube-apiserver.log" 2>&1 &
  echo $! >"$w/kube-apiserver.pid"

  export KUBECONFIG="$w/kubeconfig"
  cat >"$KUBECONFIG" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
  - name: cg-live
    cluster:
      server: https://127.0.0.1:$api_port
      certificate-authority: $w/pki/apiserver.crt
users:
  - name: cg-admin
    user:
      token: $token
contexts:
  - name: cg-live
    context: { cluster: cg-live, user: cg-admin }
current-context: cg-live
KUBECONFIG
  chmod 0600 "$KUBECONFIG"
  if ! wait_until 90 kubectl get --raw /readyz; then
    tail -20 "$CG_LOGS/kube-apiserver.log" >&2; fail "kube-apiserver not ready within 90 s"; return 1
  fi

  # Only the controllers the chart's objects need: no cloud, no node lifecycle (kwok's nodes send no heartbeats).
  "$KUBE_DIR/kube-controller-manager" --kubeconfig "$KUBECONFIG" --leader-elect=false --secure-port 0 \
    --service-account-private-key-file "$w/sa.key" \
    --controllers deployment-controller,replicaset-controller,namespace-controller,garbage-collector-controller,serviceaccount-controller,persistentvolume-binder-controller,persistentvolume-protection-controller,persistentvolumeclaim-protection-controller,disruption-controller,endpointslice-controller \
    >"$CG_LOGS/kube-controller-manager.log" 2>&1 &
  echo $! >"$w/kube-controller-manager.pid"
  "$KUBE_DIR/kube-scheduler" --kubeconfig "$KUBECONFIG" --leader-elect=false --secure-port 0 \
    >"$CG_LOGS/kube-scheduler.log" 2>&1 &
  echo $! >"$w/kube-scheduler.pid"
  "$KWOK_BIN" --kubeconfig "$KUBECONFIG" --config "$KWOK_STAGES" --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake --node-ip 10.0.0.1 \
    --server-address "127.0.0.1:$kwok_port" >"$CG_LOGS/kwok.log" 2>&1 &
  echo $! >"$w/kwok.pid"

  kubectl apply -f "$(dirname "$KWOK_BIN")/storage-class.yaml" >/dev/null
  kubectl apply -f "$CG_ROOT/test/deploy/live/kwok-node.yaml" >/dev/null
  # The API server taints every new node not-ready; the node lifecycle controller, not run here (kwok's
  # nodes send no heartbeats for it), would lift the taint once the node is Ready. Lift it by hand.
  kubectl taint node cg-kwok-0 node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
  if wait_until 60 bash -c "[[ \$(kubectl get node cg-kwok-0 -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}') == True ]]"; then
    ok "control plane $KUBE_VERSION on 127.0.0.1:$api_port with a kwok node Ready"
  else
    tail -20 "$CG_LOGS/kwok.log" >&2; fail "the kwok node did not become Ready"; return 1
  fi
}

# deploy_ready NS NAME: the Deployment has all its replicas ready (kwok marks pods ready once scheduled).
deploy_ready() {
  local want have
  want="$(kubectl -n "$1" get deploy "$2" -o jsonpath='{.spec.replicas}')"
  have="$(kubectl -n "$1" get deploy "$2" -o jsonpath='{.status.readyReplicas}')"
  [[ -n "$want" && "$want" == "$have" ]]
}

# pod_security_warnings VALUES: what the API server says of the chart's objects (with deploy/kubernetes/VALUES)
# in the restricted namespace llm, by a server-side dry run: its warnings name every Pod Security violation.
pod_security_warnings() {
  helm template probe ./helm/context-guardian -n llm --kube-version "$KUBE_VERSION" -f "deploy/kubernetes/$1" \
    | kubectl apply -n llm --dry-run=server -f - 2>&1 >/dev/null
}
# The dry run itself must succeed, so that a broken one cannot pass for "no warnings".
no_pod_security_warning() {
  local out
  out="$(pod_security_warnings "$1")" && ! grep -q 'violate PodSecurity' <<<"$out"
}

check_values_server_side() {
  section "kubernetes: every values file accepted server-side (helm install --dry-run=server)"
  kubectl create namespace cg-dry-run >/dev/null
  local values out n=0
  for values in "$CG_ROOT"/test/deploy/values/*.yaml "$CG_ROOT"/deploy/kubernetes/*-values.yaml; do
    n=$((n + 1))
    if out="$(helm install "dry$n" "$CG_ROOT/helm/context-guardian" -n cg-dry-run -f "$values" --dry-run=server 2>&1)"; then
      ok "accepted: ${values#"$CG_ROOT"/}"
    else
      fail "refused: ${values#"$CG_ROOT"/}: $(tail -3 <<<"$out")"
    fi
  done
}

check_standalone() {
  section "kubernetes: standalone under Pod Security \"restricted\", upgrade, uninstall"
  local cmdlog="$CG_LOGS/kube-standalone.log" out
  # The commands of docs/deploy.md, "Standalone", in order.
  {
    kubectl create namespace llm &&
      kubectl label namespace llm pod-security.kubernetes.io/enforce=restricted &&
      kubectl -n llm create secret generic context-guardian-secrets \
        --from-literal=redis-url=redis://redis.llm.svc:6379 --from-literal=admin-token="$(openssl rand -hex 32)" \
        --from-literal=tokens="$(openssl rand -hex 24) alice" &&
      helm install guardian ./helm/context-guardian -n llm -f deploy/kubernetes/standalone-values.yaml --wait --timeout 120s
  } >"$cmdlog" 2>&1 || { tail -20 "$cmdlog" >&2; fail "standalone: helm install failed"; return; }
  ok "standalone: helm install --wait in namespace llm (enforce=restricted)"
  check "standalone: both replicas ready" deploy_ready llm guardian-context-guardian
  check "standalone: the API server finds nothing in it that \"restricted\" forbids" \
    no_pod_security_warning standalone-values.yaml
  out="$(kubectl -n llm get pvc -o jsonpath='{range .items[*]}{.metadata.name}={.status.phase} {end}')"
  check "standalone: data and anchor claims bound by the default StorageClass: $out" \
    bash -c '[[ $(grep -o "=Bound" <<<"$1" | wc -l) -ge 2 ]]' _ "$out"
  check "standalone: the NOTES say the ServiceMonitor needs the Prometheus Operator CRDs" \
    grep -q "monitoring.coreos.com/v1" "$cmdlog"

  # With the Prometheus Operator's CRD present, the same values create the ServiceMonitor.
  kubectl apply -f "$CG_ROOT/test/deploy/live/servicemonitor-crd.yaml" >/dev/null
  kubectl wait --for condition=established crd/servicemonitors.monitoring.coreos.com --timeout 30s >/dev/null
  if helm upgrade guardian ./helm/context-guardian -n llm -f deploy/kubernetes/standalone-values.yaml \
    --set config.logLevel=debug --wait --timeout 120s >>"$cmdlog" 2>&1; then
    ok "standalone: helm upgrade --set config.logLevel=debug"
  else
    tail -20 "$cmdlog" >&2; fail "standalone: helm upgrade failed"
  fi
  check "standalone: revision 2 deployed" bash -c 'helm status guardian -n llm -o json | grep -q "\"version\":2"'
  out="$(kubectl -n llm get deploy guardian-context-guardian -o jsonpath='{.spec.template.spec.containers[0].env[?(@.name=="GUARDIAN_LOG_LEVEL")].value}')"
  check "standalone: the upgraded pods carry GUARDIAN_LOG_LEVEL=$out" test "$out" = debug
  check "standalone: pods of the new revision ready" wait_until 60 deploy_ready llm guardian-context-guardian
  check "standalone: the ServiceMonitor exists now that its API does" kubectl -n llm get servicemonitor guardian-context-guardian

  helm uninstall guardian -n llm --wait >>"$cmdlog" 2>&1
  check "standalone: helm uninstall removed the Deployment" bash -c '! kubectl -n llm get deploy guardian-context-guardian >/dev/null 2>&1'
  out="$(kubectl -n llm get pvc -o name)"
  check "standalone: the archive claims are kept: $(tr '\n' ' ' <<<"$out")" bash -c '[[ $(wc -l <<<"$1") -ge 2 ]]' _ "$out"
  if helm install guardian ./helm/context-guardian -n llm -f deploy/kubernetes/standalone-values.yaml \
    --wait --timeout 120s >>"$cmdlog" 2>&1; then
    ok "standalone: a new install takes the kept claims over"
  else
    tail -5 "$cmdlog" >&2; fail "standalone: reinstalling over the kept claims failed"
  fi
}

check_sidecar() {
  section "kubernetes: sidecar under Pod Security \"baseline\""
  local cmdlog="$CG_LOGS/kube-sidecar.log" out
  {
    kubectl create namespace llm-gpu &&
      kubectl label namespace llm-gpu pod-security.kubernetes.io/enforce=baseline &&
      kubectl -n llm-gpu create secret generic hf-token --from-literal=HF_TOKEN=hf_cglive_not_a_real_token &&
      helm install coder ./helm/context-guardian -n llm-gpu -f deploy/kubernetes/sidecar-values.yaml --wait --timeout 120s
  } >"$cmdlog" 2>&1 || { tail -20 "$cmdlog" >&2; fail "sidecar: helm install failed"; return; }
  ok "sidecar: helm install --wait in namespace llm-gpu (enforce=baseline)"
  check "sidecar: the pod (vLLM + guardian) is ready on the GPU node" deploy_ready llm-gpu coder-context-guardian
  # Why baseline: vLLM's image runs as root, which "restricted" forbids (the API server says so).
  out="$(pod_security_warnings sidecar-values.yaml)"
  check "sidecar: under \"restricted\" the API server would refuse its pod: $(grep -o 'violate PodSecurity "[^"]*"' <<<"$out" | head -1)" \
    grep -q 'violate PodSecurity "restricted' <<<"$out"
}

# Issue 30 item 2: every key the chart gained for platform teams, installed for real. The standalone set under
# "restricted" (its init and extra containers included: a refused pod would never become ready), the sidecar set
# with the model cache on a claim and a RuntimeClass; the optional APIs served by stand-in CRDs.
check_extensions() {
  section "kubernetes: the pod extensions and optional objects, installed"
  local cmdlog="$CG_LOGS/kube-extensions.log" out kind
  {
    kubectl apply -f "$CG_ROOT/test/deploy/live/servicemonitor-crd.yaml" -f "$CG_ROOT/test/deploy/live/extension-crds.yaml" &&
      kubectl wait --for condition=established --timeout 30s crd/servicemonitors.monitoring.coreos.com \
        crd/prometheusrules.monitoring.coreos.com crd/httproutes.gateway.networking.k8s.io &&
      kubectl create namespace llm-ext &&
      kubectl label namespace llm-ext pod-security.kubernetes.io/enforce=restricted &&
      helm install ext ./helm/context-guardian -n llm-ext -f test/deploy/values/standalone-extensions.yaml --wait --timeout 120s
  } >"$cmdlog" 2>&1 || { tail -20 "$cmdlog" >&2; fail "extensions: helm install failed"; return; }
  ok "extensions: helm install --wait of standalone-extensions.yaml in namespace llm-ext (enforce=restricted)"
  check "extensions: the pod (init container, guardian, extra container) is ready" deploy_ready llm-ext ext-context-guardian
  out="$(kubectl -n llm-ext get deploy ext-context-guardian -o jsonpath='{.spec.template.spec.initContainers[*].name} / {.spec.template.spec.containers[*].name}')"
  check "extensions: containers $out" test "$out" = "wait-for-upstream / guardian log-shipper"
  for kind in ingress httproute prometheusrule servicemonitor; do
    check "extensions: the $kind exists" kubectl -n llm-ext get "$kind" ext-context-guardian
  done
  out="$(kubectl -n llm-ext get configmap -l grafana_dashboard=1 -o name)"
  check "extensions: the dashboard ConfigMap carries grafana_dashboard=1: $out" test "$out" = configmap/ext-context-guardian-dashboard
  check "extensions: both extraObjects exist (a map and a tpl string)" \
    kubectl -n llm-ext get configmap guardian-extra-env ext-notes

  {
    kubectl create namespace llm-gpu-ext &&
      kubectl label namespace llm-gpu-ext pod-security.kubernetes.io/enforce=baseline &&
      kubectl apply -f - <<<'{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"nvidia"},"handler":"nvidia"}' &&
      helm install gpu-ext ./helm/context-guardian -n llm-gpu-ext -f test/deploy/values/sidecar-extensions.yaml --wait --timeout 120s
  } >>"$cmdlog" 2>&1 || { tail -20 "$cmdlog" >&2; fail "extensions: sidecar helm install failed"; return; }
  ok "extensions: helm install --wait of sidecar-extensions.yaml in namespace llm-gpu-ext (enforce=baseline)"
  check "extensions: the sidecar pod is ready" deploy_ready llm-gpu-ext gpu-ext-context-guardian
  out="$(kubectl -n llm-gpu-ext get pvc gpu-ext-context-guardian-model-cache -o jsonpath='{.status.phase}')"
  check "extensions: the model cache claim is $out" test "$out" = Bound
  out="$(kubectl -n llm-gpu-ext get pod -l app.kubernetes.io/instance=gpu-ext -o jsonpath='{.items[0].spec.runtimeClassName} {.items[0].spec.containers[0].resources.requests.cpu}')"
  check "extensions: the pod runs under RuntimeClass and CPU request: $out" test "$out" = "nvidia 6"
  helm uninstall gpu-ext -n llm-gpu-ext --wait >>"$cmdlog" 2>&1
  # The claim goes once no pod holds it (its protection finalizer), so wait for that.
  check "extensions: uninstall deletes the model cache claim and keeps the archive's" wait_until 60 bash -c \
    '[[ "$(kubectl -n llm-gpu-ext get pvc -o name | tr "\n" " ")" == "persistentvolumeclaim/gpu-ext-context-guardian-data " ]]'
}

check_kube() {
  section "kubernetes: control plane on loopback"
  local t0 path="$PATH"; t0=$(now_ms)
  # kubectl and helm by name, as the documented commands call them; KUBECONFIG is the throwaway cluster's.
  export PATH="$KUBE_DIR:$(dirname "$HELM"):$PATH"
  if kube_start; then
    check_values_server_side
    check_standalone
    check_sidecar
    check_extensions
  fi
  CG_FIGURES+=("kubernetes section: $(secs_since "$t0") s")
  cleanup_now
  export PATH="$path"; unset KUBECONFIG
}
