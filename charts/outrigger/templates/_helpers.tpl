{{/*
The name of every object: the release name, or `<release>-outrigger` when the release name does
not contain the chart's (as `helm create` names them). The default install (release `outrigger`)
names everything `outrigger`, as deploy/base does.
*/}}
{{- define "outrigger.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object (the selector label of deploy/base). */}}
{{- define "outrigger.labels" -}}
app.kubernetes.io/name: {{ include "outrigger.fullname" . }}
{{- end -}}

{{/* The webhook configuration's name. */}}
{{- define "outrigger.webhookName" -}}
{{- printf "%s-sidecar-injector" (include "outrigger.fullname" .) -}}
{{- end -}}

{{/* The serving certificate's Secret. */}}
{{- define "outrigger.tlsSecret" -}}
{{- printf "%s-tls" (include "outrigger.fullname" .) -}}
{{- end -}}

{{/* The image reference: by digest when one is given, else by tag (default appVersion). */}}
{{- define "outrigger.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* Istio's ConfigMap names for `.Values.revision` (`-REV` appended unless default). */}}
{{- define "outrigger.istioConfigMaps" -}}
{{- if or (eq .Values.revision "default") (eq .Values.revision "") -}}
istio-sidecar-injector,istio
{{- else -}}
istio-sidecar-injector-{{ .Values.revision }},istio-{{ .Values.revision }}
{{- end -}}
{{- end -}}

{{/*
The labels that make a namespace selected by the values' extra namespace selector
(webhook.namespaceSelector): its matchLabels, the first value of each In, an empty value for each
Exists (NotIn and DoesNotExist hold without a label). As YAML lines.
*/}}
{{- define "outrigger.namespaceSelectorLabels" -}}
{{- $labels := dict -}}
{{- with .Values.webhook.namespaceSelector -}}
{{- range $k, $v := .matchLabels }}{{ $_ := set $labels $k $v }}{{ end -}}
{{- range .matchExpressions -}}
{{- if eq .operator "In" }}{{ $_ := set $labels .key (first .values) }}{{ end -}}
{{- if eq .operator "Exists" }}{{ $_ := set $labels .key "" }}{{ end -}}
{{- end -}}
{{- end -}}
{{- with $labels }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{/*
Refusals of contradictory values, each naming the values at fault (the schema refuses the rest).
*/}}
{{- define "outrigger.validate" -}}
{{- if and .Values.takeover.enabled (not (or (eq .Values.revision "default") (eq .Values.revision ""))) -}}
{{- fail (printf "takeover.enabled takes over istiod's default revision: it cannot serve revision %q at once (set revision=default, or select revision %q's pods without takeover)" .Values.revision .Values.revision) -}}
{{- end -}}
{{- if and .Values.takeover.enabled (ne .Values.selectorRevision "outrigger") -}}
{{- fail "takeover.enabled selects istiod's default revision: selectorRevision cannot be set with it" -}}
{{- end -}}
{{- if and (not .Values.takeover.enabled) (or (eq .Values.selectorRevision "default") (eq .Values.selectorRevision "")) -}}
{{- fail "selectorRevision \"default\" selects the pods istiod selects: set takeover.enabled=true instead, after removing istiod's injector webhooks" -}}
{{- end -}}
{{- if and (eq .Values.webhook.failurePolicy "Fail") (lt (int .Values.replicaCount) 2) (not .Values.podDisruptionBudget.enabled) -}}
{{- fail "webhook.failurePolicy Fail with a single replica and no PodDisruptionBudget refuses every selected pod while that replica is down: set replicaCount >= 2, podDisruptionBudget.enabled=true or webhook.failurePolicy=Ignore" -}}
{{- end -}}
{{- range $which, $keys := dict "namespaceSelector" (list "istio.io/rev" "istio-injection") "objectSelector" (list "istio.io/rev" "sidecar.istio.io/inject") -}}
{{- $sel := get $.Values.webhook $which | default dict -}}
{{- $used := keys ($sel.matchLabels | default dict) -}}
{{- range ($sel.matchExpressions | default list) }}{{ $used = append $used .key }}{{ end -}}
{{- range $keys }}{{ if has . $used -}}
{{- fail (printf "webhook.%s cannot name %s: the chart's own selection decides that label (selectorRevision, takeover.enabled, the opt-out label); another requirement on it contradicts that selection" $which .) -}}
{{- end }}{{ end -}}
{{- end -}}
{{- if has (int .Values.metrics.port) (list 9443 9444) -}}
{{- fail (printf "metrics.port %d is taken by the webhook (9443) or the health port (9444): choose another" (int .Values.metrics.port)) -}}
{{- end -}}
{{- if and (not .Values.istio.configMaps) (not (or (eq .Values.revision "default") (eq .Values.revision ""))) -}}
{{- fail (printf "revision %q names Istio ConfigMaps to serve, but istio.configMaps=false serves the embedded configuration: set istio.configMaps=true, or leave revision at default" .Values.revision) -}}
{{- end -}}
{{- if .Values.probe.interval -}}
{{- if has .Values.probe.namespace (concat (list .Release.Namespace "kube-system") .Values.webhook.excludeNamespaces) -}}
{{- fail (printf "probe.namespace %q is a namespace the webhook never selects (its own, kube-system, webhook.excludeNamespaces): the probe would report every pod uninjected" .Values.probe.namespace) -}}
{{- end -}}
{{- with .Values.webhook.objectSelector -}}
{{- $needs := keys (.matchLabels | default dict) -}}
{{- range (.matchExpressions | default list) }}{{ if has .operator (list "In" "Exists") }}{{ $needs = append $needs .key }}{{ end }}{{ end -}}
{{- with $needs -}}
{{- fail (printf "probe.interval: the probe's pod carries only the label app, so webhook.objectSelector's requirement on %s would leave it uninjected: turn the probe off or require no pod label" (join ", " (sortAlpha .))) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (eq .Values.webhook.failurePolicy "Fail") (lt (int .Values.replicaCount) 2) .Values.podDisruptionBudget.enabled -}}
{{- fail "webhook.failurePolicy Fail with a single replica: the PodDisruptionBudget (maxUnavailable 1) still lets that replica be evicted, and every selected pod is refused until it is back: set replicaCount >= 2 or webhook.failurePolicy=Ignore" -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled .Values.metrics.podMonitor.enabled -}}
{{- fail "metrics.serviceMonitor and metrics.podMonitor both scrape the same pods: enable one" -}}
{{- end -}}
{{- end -}}
