//! The legacy finalizer older KubeMacPools put on VirtualMachines, which only KubeMacPool
//! takes off.

use super::*;

const LEGACY_FINALIZER: &str = "k8s.v1.cni.cncf.io/kubeMacPool";
const LEGACY_NAMESPACE: &str = "kmp-legacy";

/// A VM stored with the legacy finalizer, where no admission takes it off (a namespace the VM
/// webhook leaves alone, as a VM an older release left behind): the managers' VM watch takes it
/// off, so the VM's deletion completes with no further write from anyone.
pub fn a_vm_stored_with_the_legacy_finalizer_is_deleted_without_another_write(
    ctx: &mut Ctx,
) -> Result<()> {
    deploy(ctx)?;
    ctx.apply(&kubevirt_crds())?;
    ctx.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {LEGACY_NAMESPACE}\n  labels:\n    \
         mutatevirtualmachines.kubemacpool.io: ignore\n"
    ))?;
    let outcome = (|| {
        let yaml = vm_yaml("kmp-legacy-vm", &[("default", "masquerade", "pod", None)]).replace(
            "  namespace: default\n",
            &format!("  namespace: {LEGACY_NAMESPACE}\n  finalizers:\n  - {LEGACY_FINALIZER}\n"),
        );
        wait_for(
            "the VirtualMachine CRD to be served",
            Duration::from_secs(30),
            || Ok(ctx.apply(&yaml).ok().map(drop)),
        )?;
        let deleted = std::time::Instant::now();
        ctx.kubectl(&[
            "delete",
            "virtualmachines.kubevirt.io",
            "kmp-legacy-vm",
            "-n",
            LEGACY_NAMESPACE,
            "--timeout=60s",
        ])
        .context("the VM with the legacy finalizer was not deleted")?;
        println!(
            "    kmp-legacy-vm, stored with {LEGACY_FINALIZER}: gone {:.1} s after its deletion",
            deleted.elapsed().as_secs_f64()
        );
        Ok(())
    })();
    ctx.kubectl(&["delete", "namespace", LEGACY_NAMESPACE, "--wait=false"])?;
    outcome
}
