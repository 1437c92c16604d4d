//! Stand-ins for other projects' CustomResourceDefinitions: the names, group and version of
//! theirs, with schemas that keep every field. The tier and the benchmarks install them where
//! the project itself cannot run here (its images cannot be pulled), so that the objects our
//! operator and allocator read and write are accepted as the API server would accept them.

/// CRDs of namespaced kinds in `group`; `kinds` are (plural, kind).
pub fn crds(group: &str, kinds: &[(&str, &str)]) -> String {
    crds_scoped(group, "Namespaced", kinds)
}

/// CRDs of `scope` (`Namespaced` or `Cluster`) in `group`; `kinds` are (plural, kind).
pub fn crds_scoped(group: &str, scope: &str, kinds: &[(&str, &str)]) -> String {
    kinds
        .iter()
        .map(|(plural, kind)| {
            format!(
                "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
                 metadata:\n  name: {plural}.{group}\nspec:\n  group: {group}\n  \
                 names:\n    kind: {kind}\n    plural: {plural}\n  scope: {scope}\n  versions:\n  \
                 - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        \
                 type: object\n        x-kubernetes-preserve-unknown-fields: true\n"
            )
        })
        .collect()
}

/// KubeVirt's VirtualMachine and VirtualMachineInstance (`kubevirt.io/v1`).
pub fn kubevirt_crds() -> String {
    crds(
        "kubevirt.io",
        &[
            ("virtualmachines", "VirtualMachine"),
            ("virtualmachineinstances", "VirtualMachineInstance"),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_a_crd_of_its_plural_in_the_group() {
        let yaml = kubevirt_crds();
        assert_eq!(yaml.matches("kind: CustomResourceDefinition").count(), 2);
        assert!(yaml.contains("name: virtualmachines.kubevirt.io\n"));
        assert!(yaml.contains("name: virtualmachineinstances.kubevirt.io\n"));
        assert!(yaml.contains("scope: Namespaced\n"));
    }

    #[test]
    fn a_cluster_scoped_stand_in_says_so() {
        let yaml = crds_scoped(
            "config.openshift.io",
            "Cluster",
            &[("infrastructures", "Infrastructure")],
        );
        assert!(yaml.contains("scope: Cluster\n"));
        assert!(yaml.contains("kind: Infrastructure\n"));
    }
}
