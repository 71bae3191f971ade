// Package v1 (directory k8s) mirrors the Kubernetes types the oracle's "deployment" mode decodes into.
package v1

import (
	"encoding/json"
	"time"
)

// Deployment and the types below mirror k8s.io/api apps/v1 and core/v1 (a subset of the
// fields; names, JSON tags, Go types and inline embedding as in Kubernetes), so that
// sigs.k8s.io/yaml's target-type conversion of YAML scalars sees the same struct shapes.
type Deployment struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       DeploymentSpec   `json:"spec,omitempty"`
	Status     DeploymentStatus `json:"status,omitempty"`
}

// DeploymentStatus is apps/v1 DeploymentStatus's subset (a non-pointer struct: always emitted).
type DeploymentStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	Replicas           int32 `json:"replicas,omitempty"`
}

// DeploymentStrategy is apps/v1 DeploymentStrategy's subset (always emitted, as status).
type DeploymentStrategy struct {
	Type string `json:"type,omitempty"`
}

// ResourceRequirements is core/v1 ResourceRequirements without its fields (the tests place no
// value in it); a non-pointer struct, so Go always emits it.
type ResourceRequirements struct{}

// TypeMeta is metav1.TypeMeta.
type TypeMeta struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// DeploymentSpec is apps/v1 DeploymentSpec's subset.
type DeploymentSpec struct {
	Replicas             *int32             `json:"replicas,omitempty"`
	Selector             *LabelSelector     `json:"selector"`
	Template             PodTemplateSpec    `json:"template"`
	Strategy             DeploymentStrategy `json:"strategy,omitempty"`
	MinReadySeconds      int32              `json:"minReadySeconds,omitempty"`
	RevisionHistoryLimit *int32             `json:"revisionHistoryLimit,omitempty"`
	Paused               bool               `json:"paused,omitempty"`
}

// LabelSelector is metav1.LabelSelector's subset.
type LabelSelector struct {
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// PodSpec is core/v1 PodSpec's subset.
type PodSpec struct {
	Volumes                       []Volume          `json:"volumes,omitempty"`
	InitContainers                []Container       `json:"initContainers,omitempty"`
	Containers                    []Container       `json:"containers"`
	RestartPolicy                 RestartPolicy     `json:"restartPolicy,omitempty"`
	TerminationGracePeriodSeconds *int64            `json:"terminationGracePeriodSeconds,omitempty"`
	DNSPolicy                     DNSPolicy         `json:"dnsPolicy,omitempty"`
	NodeSelector                  map[string]string `json:"nodeSelector,omitempty"`
	ServiceAccountName            string            `json:"serviceAccountName,omitempty"`
	HostNetwork                   bool              `json:"hostNetwork,omitempty"`
	Hostname                      string            `json:"hostname,omitempty"`
	Subdomain                     string            `json:"subdomain,omitempty"`
	PriorityClassName             string            `json:"priorityClassName,omitempty"`
}

// PodTemplateSpec is core/v1 PodTemplateSpec.
type PodTemplateSpec struct {
	ObjectMeta `json:"metadata,omitempty"`
	Spec       PodSpec `json:"spec,omitempty"`
}

// Volume is core/v1 Volume (VolumeSource inline).
type Volume struct {
	Name         string `json:"name"`
	VolumeSource `json:",inline"`
}

// VolumeSource is core/v1 VolumeSource's subset.
type VolumeSource struct {
	EmptyDir  *EmptyDirVolumeSource  `json:"emptyDir,omitempty"`
	Secret    *SecretVolumeSource    `json:"secret,omitempty"`
	ConfigMap *ConfigMapVolumeSource `json:"configMap,omitempty"`
}

// EmptyDirVolumeSource is core/v1 EmptyDirVolumeSource's subset.
type EmptyDirVolumeSource struct {
	Medium StorageMedium `json:"medium,omitempty"`
}

// SecretVolumeSource is core/v1 SecretVolumeSource's subset.
type SecretVolumeSource struct {
	SecretName  string `json:"secretName,omitempty"`
	DefaultMode *int32 `json:"defaultMode,omitempty"`
}

// LocalObjectReference is core/v1 LocalObjectReference.
type LocalObjectReference struct {
	Name string `json:"name,omitempty"`
}

// ConfigMapVolumeSource is core/v1 ConfigMapVolumeSource's subset.
type ConfigMapVolumeSource struct {
	LocalObjectReference `json:",inline"`
	Items                []KeyToPath `json:"items,omitempty"`
}

// KeyToPath is core/v1 KeyToPath.
type KeyToPath struct {
	Key  string `json:"key"`
	Path string `json:"path"`
	Mode *int32 `json:"mode,omitempty"`
}

// Container is core/v1 Container's subset.
type Container struct {
	Name            string               `json:"name"`
	Image           string               `json:"image,omitempty"`
	Command         []string             `json:"command,omitempty"`
	Args            []string             `json:"args,omitempty"`
	WorkingDir      string               `json:"workingDir,omitempty"`
	Ports           []ContainerPort      `json:"ports,omitempty"`
	Env             []EnvVar             `json:"env,omitempty"`
	Resources       ResourceRequirements `json:"resources,omitempty"`
	ReadinessProbe  *Probe               `json:"readinessProbe,omitempty"`
	ImagePullPolicy PullPolicy           `json:"imagePullPolicy,omitempty"`
	SecurityContext *SecurityContext     `json:"securityContext,omitempty"`
	Stdin           bool                 `json:"stdin,omitempty"`
	TTY             bool                 `json:"tty,omitempty"`
}

// ContainerPort is core/v1 ContainerPort.
type ContainerPort struct {
	Name          string   `json:"name,omitempty"`
	HostPort      int32    `json:"hostPort,omitempty"`
	ContainerPort int32    `json:"containerPort"`
	Protocol      Protocol `json:"protocol,omitempty"`
	HostIP        string   `json:"hostIP,omitempty"`
}

// EnvVar is core/v1 EnvVar.
type EnvVar struct {
	Name      string        `json:"name"`
	Value     string        `json:"value,omitempty"`
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource is core/v1 EnvVarSource's subset.
type EnvVarSource struct {
	FieldRef        *ObjectFieldSelector  `json:"fieldRef,omitempty"`
	ConfigMapKeyRef *ConfigMapKeySelector `json:"configMapKeyRef,omitempty"`
}

// ObjectFieldSelector is core/v1 ObjectFieldSelector.
type ObjectFieldSelector struct {
	APIVersion string `json:"apiVersion,omitempty"`
	FieldPath  string `json:"fieldPath"`
}

// ConfigMapKeySelector is core/v1 ConfigMapKeySelector.
type ConfigMapKeySelector struct {
	LocalObjectReference `json:",inline"`
	Key                  string `json:"key"`
	Optional             *bool  `json:"optional,omitempty"`
}

// Probe is core/v1 Probe's subset (ProbeHandler inline).
type Probe struct {
	ProbeHandler        `json:",inline"`
	InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`
	PeriodSeconds       int32 `json:"periodSeconds,omitempty"`
}

// ProbeHandler is core/v1 ProbeHandler's subset.
type ProbeHandler struct {
	Exec    *ExecAction    `json:"exec,omitempty"`
	HTTPGet *HTTPGetAction `json:"httpGet,omitempty"`
}

// ExecAction is core/v1 ExecAction.
type ExecAction struct {
	Command []string `json:"command,omitempty"`
}

// HTTPGetAction is core/v1 HTTPGetAction's subset.
type HTTPGetAction struct {
	Path        string       `json:"path,omitempty"`
	Port        IntOrString  `json:"port"`
	Host        string       `json:"host,omitempty"`
	Scheme      URIScheme    `json:"scheme,omitempty"`
	HTTPHeaders []HTTPHeader `json:"httpHeaders,omitempty"`
}

// HTTPHeader is core/v1 HTTPHeader.
type HTTPHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// IntOrString mirrors intstr.IntOrString: a JSON unmarshaler (so sigs.k8s.io/yaml converts
// nothing for it) taking a number or a string, marshalled back as it came.
type IntOrString struct {
	raw json.RawMessage
}

// UnmarshalJSON accepts a JSON number or string.
func (v *IntOrString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		var i int32
		if err := json.Unmarshal(b, &i); err != nil {
			return err
		}
	}
	v.raw = append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON writes the value as it came (0 when unset).
func (v IntOrString) MarshalJSON() ([]byte, error) {
	if len(v.raw) == 0 {
		return []byte("0"), nil
	}
	return v.raw, nil
}

// SecurityContext is core/v1 SecurityContext's subset.
type SecurityContext struct {
	RunAsUser  *int64 `json:"runAsUser,omitempty"`
	Privileged *bool  `json:"privileged,omitempty"`
}

// ObjectMeta is metav1.ObjectMeta's string-typed subset.
type ObjectMeta struct {
	Name         string            `json:"name,omitempty"`
	GenerateName string            `json:"generateName,omitempty"`
	Namespace    string            `json:"namespace,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
}

// Named string types of core/v1 (Go names them in unmarshal errors).
type (
	// RestartPolicy is core/v1 RestartPolicy.
	RestartPolicy string
	// DNSPolicy is core/v1 DNSPolicy.
	DNSPolicy string
	// StorageMedium is core/v1 StorageMedium.
	StorageMedium string
	// PullPolicy is core/v1 PullPolicy.
	PullPolicy string
	// Protocol is core/v1 Protocol.
	Protocol string
	// URIScheme is core/v1 URIScheme.
	URIScheme string
)

// Time is metav1.Time (k8s.io/apimachinery/pkg/apis/meta/v1/time.go), transcribed: its JSON
// methods decide how creationTimestamp and the like read (RFC 3339, then the local zone) and
// write (UTC, second precision, null for the zero time); printing goes through the embedded
// time.Time's String.
type Time struct {
	time.Time `protobuf:"-"`
}

// UnmarshalJSON is metav1.Time's.
func (t *Time) UnmarshalJSON(b []byte) error {
	if len(b) == 4 && string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return err
	}
	pt, err := time.Parse(time.RFC3339, str)
	if err != nil {
		return err
	}
	t.Time = pt.Local()
	return nil
}

// MarshalJSON is metav1.Time's.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	buf := make([]byte, 0, len(time.RFC3339)+2)
	buf = append(buf, '"')
	buf = t.UTC().AppendFormat(buf, time.RFC3339)
	buf = append(buf, '"')
	return buf, nil
}

// TimedMeta is metav1.ObjectMeta's name and time fields, as templates see them.
type TimedMeta struct {
	Name              string `json:"name,omitempty"`
	CreationTimestamp Time   `json:"creationTimestamp"`
	DeletionTimestamp *Time  `json:"deletionTimestamp,omitempty"`
}
