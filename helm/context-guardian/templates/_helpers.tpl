{{/* Names and labels. */}}
{{- define "context-guardian.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "context-guardian.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "context-guardian.component" -}}
{{- if eq .Values.mode "sidecar" -}}inference{{- else -}}guardian{{- end -}}
{{- end -}}

{{- define "context-guardian.selectorLabels" -}}
app.kubernetes.io/name: {{ include "context-guardian.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ include "context-guardian.component" . }}
{{- end -}}

{{- define "context-guardian.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "context-guardian.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "context-guardian.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "context-guardian.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "context-guardian.secretName" -}}
{{- printf "%s-secrets" (include "context-guardian.fullname" .) -}}
{{- end -}}

{{- define "context-guardian.dataClaimName" -}}
{{- default (printf "%s-data" (include "context-guardian.fullname" .)) .Values.persistence.existingClaim -}}
{{- end -}}

{{- define "context-guardian.modelCacheClaimName" -}}
{{- default (printf "%s-model-cache" (include "context-guardian.fullname" .)) .Values.inference.modelCache.existingClaim -}}
{{- end -}}

{{- define "context-guardian.anchorClaimName" -}}
{{- default (printf "%s-anchor" (include "context-guardian.fullname" .)) .Values.anchor.existingClaim -}}
{{- end -}}

{{/* The upstream guardian forwards to: the URL in values, or the inference container on localhost. */}}
{{- define "context-guardian.upstreamUrl" -}}
{{- if eq .Values.mode "sidecar" -}}
{{- printf "http://127.0.0.1:%d/v1" (int .Values.inference.port) -}}
{{- else -}}
{{- .Values.upstream.url -}}
{{- end -}}
{{- end -}}

{{- define "context-guardian.networkPolicyEnabled" -}}
{{- if kindIs "invalid" .Values.networkPolicy.enabled -}}
{{- if eq .Values.mode "standalone" -}}true{{- end -}}
{{- else if .Values.networkPolicy.enabled -}}true{{- end -}}
{{- end -}}

{{/* The one table of value -> variable (values.yaml `config`, README.md). */}}
{{- define "context-guardian.configEnvNames" -}}
numCtx: GUARDIAN_NUM_CTX
compactThreshold: GUARDIAN_COMPACT_THRESHOLD
reserveOutput: GUARDIAN_RESERVE_OUTPUT
keepRecentFraction: GUARDIAN_KEEP_RECENT_FRACTION
keepRecentMessages: GUARDIAN_KEEP_RECENT_MESSAGES
cutHeadroomTurns: GUARDIAN_CUT_HEADROOM_TURNS
charsPerToken: GUARDIAN_CHARS_PER_TOKEN
countTools: GUARDIAN_COUNT_TOOLS
calibrate: GUARDIAN_CALIBRATE
tokenizeTimeoutMs: GUARDIAN_TOKENIZE_TIMEOUT_MS
upstreamTimeout: GUARDIAN_UPSTREAM_TIMEOUT
upstreamConnectTimeout: GUARDIAN_UPSTREAM_CONNECT_TIMEOUT
maxBodyBytes: GUARDIAN_MAX_BODY_BYTES
shutdownDrainSeconds: GUARDIAN_SHUTDOWN_DRAIN_SECONDS
spanDir: GUARDIAN_SPAN_DIR
logDir: GUARDIAN_LOG_DIR
receipts: GUARDIAN_RECEIPTS
keepSpans: GUARDIAN_KEEP_SPANS
retentionDays: GUARDIAN_RETENTION_DAYS
logOrigin: GUARDIAN_LOG_ORIGIN
logKeyFile: GUARDIAN_LOG_KEY_FILE
nativeCompaction: GUARDIAN_NATIVE_COMPACTION
nativeKeyFile: GUARDIAN_NATIVE_KEY_FILE
summaryTimeoutMs: GUARDIAN_SUMMARY_TIMEOUT_MS
precompactThreshold: GUARDIAN_PRECOMPACT_THRESHOLD
precompactConcurrency: GUARDIAN_PRECOMPACT_CONCURRENCY
minSummaryChars: GUARDIAN_MIN_SUMMARY_CHARS
minTranscriptChars: GUARDIAN_MIN_TRANSCRIPT_CHARS
toolArgChars: GUARDIAN_TOOL_ARG_CHARS
summaryReasoningEffort: GUARDIAN_SUMMARY_REASONING_EFFORT
summaryMemo: GUARDIAN_SUMMARY_MEMO
pinMaxChars: GUARDIAN_PIN_MAX_CHARS
ledgerMaxChars: GUARDIAN_LEDGER_MAX_CHARS
statedMaxChars: GUARDIAN_STATED_MAX_CHARS
recallMaxChars: GUARDIAN_RECALL_MAX_CHARS
anchorMaxChars: GUARDIAN_ANCHOR_MAX_CHARS
clearToolResults: GUARDIAN_CLEAR_TOOL_RESULTS
handoff: GUARDIAN_HANDOFF
dryRun: GUARDIAN_DRY_RUN
capture: GUARDIAN_CAPTURE
costPer1mInputUsd: GUARDIAN_COST_PER_1M_INPUT_USD
costPer1mOutputUsd: GUARDIAN_COST_PER_1M_OUTPUT_USD
maxSessions: GUARDIAN_MAX_SESSIONS
redisPrefix: GUARDIAN_REDIS_PREFIX
redisTimeoutMs: GUARDIAN_REDIS_TIMEOUT_MS
memoTtl: GUARDIAN_MEMO_TTL
memoLockWaitMs: GUARDIAN_MEMO_LOCK_WAIT_MS
keepAliveMs: GUARDIAN_KEEPALIVE_MS
tokenRequired: GUARDIAN_TOKEN_REQUIRED
sessionHeaderRequired: GUARDIAN_SESSION_HEADER_REQUIRED
allowedHosts: GUARDIAN_ALLOWED_HOSTS
logLevel: GUARDIAN_LOG_LEVEL
otelExporterOtlpEndpoint: OTEL_EXPORTER_OTLP_ENDPOINT
{{- end -}}

{{/* A value as the application reads it: switches as 1/0, whole numbers without an exponent. */}}
{{- define "context-guardian.envValue" -}}
{{- if kindIs "bool" . -}}
{{- ternary "1" "0" . -}}
{{- else if and (kindIs "float64" .) (eq . (float64 (int64 .))) -}}
{{- int64 . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{/* Environment of the guardian container. */}}
{{- define "context-guardian.env" -}}
{{- $names := include "context-guardian.configEnvNames" . | fromYaml -}}
- name: GUARDIAN_HOST
  value: "0.0.0.0"
- name: GUARDIAN_PORT
  value: {{ .Values.port | int | toString | quote }}
- name: GUARDIAN_UPSTREAM_URL
  value: {{ include "context-guardian.upstreamUrl" . | quote }}
- name: GUARDIAN_DATA_DIR
  value: {{ .Values.persistence.mountPath | quote }}
- name: GUARDIAN_SHUTDOWN_GRACE_SECONDS
  value: {{ include "context-guardian.shutdownGraceSeconds" . | quote }}
{{- if .Values.nodeHeapMiB }}
{{- /* Node sizes its heap from the host's memory, not the pod's limit: past the limit the kernel kills it. */}}
- name: NODE_OPTIONS
  value: {{ printf "--max-old-space-size=%d" (int .Values.nodeHeapMiB) | quote }}
{{- end }}
{{- if .Values.anchor.enabled }}
- name: GUARDIAN_SEAL_ANCHOR_DIR
  value: {{ .Values.anchor.mountPath | quote }}
{{- end }}
{{- range $key := keys .Values.config | sortAlpha }}
{{- $val := index $.Values.config $key }}
{{- if not (hasKey $names $key) }}
{{- fail (printf "config.%s maps onto no environment variable (see the chart README)" $key) }}
{{- end }}
{{- if not (kindIs "invalid" $val) }}
- name: {{ index $names $key }}
  value: {{ include "context-guardian.envValue" $val | quote }}
{{- end }}
{{- end }}
{{- if or .Values.redis.url .Values.redis.existingSecret }}
- name: GUARDIAN_REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ default (include "context-guardian.secretName" .) .Values.redis.existingSecret }}
      key: {{ ternary .Values.redis.existingSecretKey "redis-url" (not (empty .Values.redis.existingSecret)) }}
{{- end }}
{{- if or .Values.auth.adminToken (and .Values.auth.existingSecret .Values.auth.adminTokenKey) }}
- name: GUARDIAN_ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ default (include "context-guardian.secretName" .) .Values.auth.existingSecret }}
      key: {{ ternary .Values.auth.adminTokenKey "admin-token" (not (empty .Values.auth.existingSecret)) }}
{{- end }}
{{- if include "context-guardian.tokensFileEnabled" . }}
- name: GUARDIAN_TOKENS_FILE
  value: /etc/context-guardian/tokens/tokens
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "context-guardian.tokensFileEnabled" -}}
{{- if or .Values.auth.tokensFile (and .Values.auth.existingSecret .Values.auth.tokensFileKey) -}}true{{- end -}}
{{- end -}}

{{/* Port of a URL: the explicit one, else the scheme's (80 / 443). */}}
{{- define "context-guardian.urlPort" -}}
{{- $u := urlParse . -}}
{{- $hostParts := splitList ":" $u.host -}}
{{- if gt (len $hostParts) 1 -}}
{{- last $hostParts -}}
{{- else if eq $u.scheme "https" -}}
443
{{- else -}}
80
{{- end -}}
{{- end -}}

{{/*
GUARDIAN_SHUTDOWN_GRACE_SECONDS: the pod's grace less the preStop wait (it runs before SIGTERM) and a margin for
ending the streams still open and exiting before SIGKILL (docs/RELIABILITY.md#shutdown).
*/}}
{{- define "context-guardian.shutdownGraceSeconds" -}}
{{- $grace := sub (sub (int .Values.terminationGracePeriodSeconds) (int .Values.shutdown.preStopSeconds)) (int .Values.shutdown.marginSeconds) -}}
{{- if lt $grace 1 -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed shutdown.preStopSeconds + shutdown.marginSeconds (%d): guardian would have no time to let answers in flight finish" (int .Values.terminationGracePeriodSeconds) (add (int .Values.shutdown.preStopSeconds) (int .Values.shutdown.marginSeconds))) -}}
{{- end -}}
{{- $grace -}}
{{- end -}}
