// Validates a rendered object against the Kubernetes OpenAPI schema of its apiVersion/kind
// (kubernetes-models), the Prometheus Operator's CRD schemas (ServiceMonitor, PrometheusRule) or the
// Gateway API's (HTTPRoute).
import { HTTPRoute } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1';
import {
  PrometheusRule,
  ServiceMonitor,
} from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, PersistentVolumeClaim, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import type { K8sObject } from './helm';

interface Validatable {
  validate(): void;
}
type ModelFactory = (data: K8sObject) => Validatable;

const MODELS: Record<string, ModelFactory> = {
  'apps/v1/Deployment': (d) => new Deployment(d),
  'autoscaling/v2/HorizontalPodAutoscaler': (d) => new HorizontalPodAutoscaler(d),
  'networking.k8s.io/v1/Ingress': (d) => new Ingress(d),
  'networking.k8s.io/v1/NetworkPolicy': (d) => new NetworkPolicy(d),
  'policy/v1/PodDisruptionBudget': (d) => new PodDisruptionBudget(d),
  'v1/ConfigMap': (d) => new ConfigMap(d),
  'v1/PersistentVolumeClaim': (d) => new PersistentVolumeClaim(d),
  'v1/Secret': (d) => new Secret(d),
  'v1/Service': (d) => new Service(d),
  'v1/ServiceAccount': (d) => new ServiceAccount(d),
  'monitoring.coreos.com/v1/ServiceMonitor': (d) =>
    new ServiceMonitor(d as unknown as ConstructorParameters<typeof ServiceMonitor>[0]),
  'monitoring.coreos.com/v1/PrometheusRule': (d) =>
    new PrometheusRule(d as unknown as ConstructorParameters<typeof PrometheusRule>[0]),
  'gateway.networking.k8s.io/v1/HTTPRoute': (d) =>
    new HTTPRoute(d as unknown as ConstructorParameters<typeof HTTPRoute>[0]),
};

/** Throws with the schema's own message when the object is invalid or of a kind we cannot check. */
export function validateObject(obj: K8sObject): void {
  const key = `${obj.apiVersion}/${obj.kind}`;
  const factory = MODELS[key];
  if (!factory)
    throw new Error(`no schema for ${key}: add its kubernetes-models class to test/deploy/k8s-schema.ts`);
  try {
    factory(obj).validate();
  } catch (err) {
    throw new Error(`${key} ${obj.metadata.name} does not match the Kubernetes schema: ${String(err)}`, {
      cause: err,
    });
  }
}
