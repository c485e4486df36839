{{/*
The guardian container. Named so that a chart depending on this one can place guardian in its own
inference pod: include "context-guardian.container" with this chart's context (docs/adr/0101).
*/}}
{{- define "context-guardian.container" -}}
- name: guardian
  image: {{ printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  ports:
    - name: http
      containerPort: {{ .Values.port | int }}
      protocol: TCP
  env:
    {{- include "context-guardian.env" . | nindent 4 }}
  {{- with .Values.envFrom }}
  envFrom:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.probes.startup }}
  startupProbe:
    httpGet:
      path: /healthz
      port: http
    {{- toYaml . | nindent 4 }}
  {{- end }}
  livenessProbe:
    httpGet:
      path: /healthz
      port: http
    {{- toYaml .Values.probes.liveness | nindent 4 }}
  # /readyz never gates on the span volume, Redis or the upstream (CONTRACTS §2 rule 2).
  readinessProbe:
    httpGet:
      path: /readyz
      port: http
    {{- toYaml .Values.probes.readiness | nindent 4 }}
  {{- if .Values.lifecycle }}
  {{- /* A user-set lifecycle replaces the chart's own hooks as a whole (values.yaml, `lifecycle`). */}}
  lifecycle:
    {{- toYaml .Values.lifecycle | nindent 4 }}
  {{- else if gt (int .Values.shutdown.preStopSeconds) 0 }}
  # Before SIGTERM: the Service's endpoints and the proxies reading them drop the pod asynchronously, and a listener
  # that closed at once refused what they still sent. An exec of the image's sleep, not the `sleep` action, which
  # needs Kubernetes 1.30.
  lifecycle:
    preStop:
      exec:
        command: ["sleep", {{ .Values.shutdown.preStopSeconds | int | toString | quote }}]
  {{- end }}
  resources:
    {{- toYaml .Values.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  volumeMounts:
    - name: data
      mountPath: {{ .Values.persistence.mountPath }}
    - name: tmp
      mountPath: /tmp
    {{- if .Values.anchor.enabled }}
    - name: anchor
      mountPath: {{ .Values.anchor.mountPath }}
    {{- end }}
    {{- if include "context-guardian.tokensFileEnabled" . }}
    - name: tokens
      mountPath: /etc/context-guardian/tokens
      readOnly: true
    {{- end }}
    {{- with .Values.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* The volumes the guardian container mounts. */}}
{{- define "context-guardian.volumes" -}}
- name: data
  {{- if .Values.persistence.enabled }}
  persistentVolumeClaim:
    claimName: {{ include "context-guardian.dataClaimName" . }}
  {{- else }}
  emptyDir: {}
  {{- end }}
- name: tmp
  emptyDir:
    sizeLimit: 256Mi
{{- if .Values.anchor.enabled }}
- name: anchor
  persistentVolumeClaim:
    claimName: {{ include "context-guardian.anchorClaimName" . }}
{{- end }}
{{- if include "context-guardian.tokensFileEnabled" . }}
- name: tokens
  secret:
    secretName: {{ default (include "context-guardian.secretName" .) .Values.auth.existingSecret }}
    defaultMode: 0440
    items:
      - key: {{ ternary .Values.auth.tokensFileKey "tokens" (not (empty .Values.auth.existingSecret)) }}
        path: tokens
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The inference container of sidecar mode (vLLM's OpenAI server by default). */}}
{{- define "context-guardian.inferenceContainer" -}}
{{- $inf := .Values.inference -}}
- name: inference
  image: {{ printf "%s:%s" $inf.image.repository $inf.image.tag | quote }}
  imagePullPolicy: {{ $inf.image.pullPolicy }}
  args:
    - --model
    - {{ required "inference.model is required in sidecar mode" $inf.model | quote }}
    - --max-model-len
    - {{ $inf.maxModelLen | int | toString | quote }}
    - --host
    - "0.0.0.0"
    - --port
    - {{ $inf.port | int | toString | quote }}
    {{- range $inf.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  ports:
    - name: inference
      containerPort: {{ $inf.port | int }}
      protocol: TCP
  {{- if or $inf.env $inf.hfTokenSecret.name }}
  env:
    {{- if $inf.hfTokenSecret.name }}
    - name: HF_TOKEN
      valueFrom:
        secretKeyRef:
          name: {{ $inf.hfTokenSecret.name }}
          key: {{ $inf.hfTokenSecret.key }}
    {{- end }}
    {{- with $inf.env }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
  startupProbe:
    httpGet:
      path: /health
      port: inference
    {{- toYaml $inf.startupProbe | nindent 4 }}
  livenessProbe:
    httpGet:
      path: /health
      port: inference
    periodSeconds: 15
    timeoutSeconds: 5
    failureThreshold: 4
  resources:
    {{- toYaml $inf.resources | nindent 4 }}
  {{- with $inf.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
    - name: dshm
      mountPath: /dev/shm
    - name: model-cache
      mountPath: {{ $inf.modelCache.mountPath }}
    {{- with $inf.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}
