//! The Service in front of a component's webhook server.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{meta, string_map, Ctx};
use crate::spec::Component;

/// The Service in front of a webhook server: 443 to `port` of the pods `selector` picks. Every
/// key of the port is set: Kubernetes 1.20's server-side apply does not default `protocol` and
/// refuses a port without it.
pub fn webhook_service(
    ctx: &Ctx,
    component: Component,
    name: &str,
    selector: &[(&str, &str)],
    port: i32,
) -> Service {
    Service {
        metadata: meta(ctx, name, Some(component)),
        spec: Some(ServiceSpec {
            ports: Some(vec![ServicePort {
                port: 443,
                protocol: Some("TCP".to_string()),
                target_port: Some(IntOrString::Int(port)),
                ..ServicePort::default()
            }]),
            selector: Some(string_map(selector)),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}
