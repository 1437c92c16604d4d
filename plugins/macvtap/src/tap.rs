//! /dev/tapN, the character device through which a VM's qemu reads and writes the frames of the
//! macvtap with ifindex N.
//!
//! devtmpfs makes the node when the macvtap registers, and again whenever it moves to another
//! namespace (the move unregisters and re-registers it, with a new minor number). But ifindexes
//! are per namespace and /dev is not: when a macvtap elsewhere already has our index, devtmpfs
//! keeps that one's node and ours gets none, and a namespace being deleted holds its nodes until
//! the kernel has torn it down. So a node is never trusted by its name: its device number is
//! looked up in /sys/dev/char, which names the netdev and tap behind every number whatever
//! namespace they are in. When our device has no node, it gets one made by hand; devtmpfs
//! never removes such a node, so DEL (or a failed ADD) does, and GC, or the DEL of a namespace
//! that is already gone, removes those whose macvtap died before DEL.

use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::{Duration, Instant};

use cni_common::{Code, Context, Error, Result, Rollback, Teardown};
use nix::sys::stat::{major, makedev, minor, mknod, Mode, SFlag};

const DEV_DIR: &str = "/dev";
const SYS_DEV_CHAR: &str = "/sys/dev/char";
const PROC_DEVICES: &str = "/proc/devices";

/// How long ADD waits for another namespace's macvtap to give up /dev/tapN: a namespace being
/// deleted takes its links down asynchronously (milliseconds, longer under load).
const RELEASE_WAIT: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(10);

/// `/dev/tap<index>`.
pub fn node_path(index: u32) -> PathBuf {
    Path::new(DEV_DIR).join(format!("tap{index}"))
}

/// The node of one macvtap.
#[derive(Debug, Clone)]
pub struct TapNode {
    path: PathBuf,
    /// `tap<N>`, the name of the node and of the device it is for.
    tap: String,
    rdev: u64,
    made: bool,
}

impl TapNode {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether devtmpfs gave no node and this call made it.
    pub fn made_by_hand(&self) -> bool {
        self.made
    }

    /// After DEL deleted the macvtap: removes the node if it is still there for the device that
    /// is now gone. Only nodes made by hand survive their device. If another tap of the same
    /// name has taken the number meanwhile, the node is right for that one and stays.
    pub fn remove_if_left_over(&self) -> Result<()> {
        match inspect(&self.path)? {
            Node::Char { rdev, owner }
                if rdev == self.rdev && owner.as_ref().is_none_or(|d| d.tap != self.tap) =>
            {
                remove(&self.path)
            }
            _ => Ok(()),
        }
    }
}

/// Makes `/dev/tap<index>` the node of macvtap `netdev` and gives it to `owner`:`group`.
/// `netdev` is the macvtap's current name, which must be unique on the node (the device plugin's
/// name or our temporary one), since names in other namespaces are visible here. A node made
/// by hand is removed again by `rollback`.
pub fn ensure_node(
    netdev: &str,
    index: u32,
    owner: u32,
    group: u32,
    rollback: &mut Rollback<'_>,
) -> Result<TapNode> {
    let path = node_path(index);
    let tap = format!("tap{index}");
    // Without it every node would look left over, and be replaced.
    if !Path::new(SYS_DEV_CHAR).is_dir() {
        return Err(Error::system(format!(
            "{SYS_DEV_CHAR} is missing (sysfs not mounted?): cannot tell whose {} is",
            path.display()
        )));
    }
    let deadline = Instant::now() + RELEASE_WAIT;
    loop {
        match inspect(&path)? {
            Node::Char {
                rdev,
                owner: Some(dev),
            } if dev.tap == tap && dev.netdev == netdev => {
                chown(&path, owner, group)?;
                return Ok(TapNode {
                    path,
                    tap,
                    rdev,
                    made: false,
                });
            }
            Node::Char {
                owner: Some(dev), ..
            } if dev.tap == tap => {
                if Instant::now() >= deadline {
                    return Err(Error::new(
                        Code::TryAgainLater,
                        format!(
                            "{} belongs to macvtap {} of another network namespace, which has the \
                             same ifindex {index}; it was not released within {RELEASE_WAIT:?}",
                            path.display(),
                            dev.netdev
                        ),
                    ));
                }
                sleep(POLL);
            }
            Node::Char {
                owner: Some(dev), ..
            } if !dev.is_tap() => {
                return Err(Error::system(format!(
                    "{} is the node of another device ({}); refusing to replace it",
                    path.display(),
                    dev.sysfs_path
                )));
            }
            // Left behind for a device that is gone, or whose number another tap has now.
            Node::Char { .. } => remove(&path)?,
            Node::Other => {
                return Err(Error::system(format!(
                    "{} exists and is not a character device; refusing to replace it",
                    path.display()
                )))
            }
            Node::Missing => {
                let rdev = device_number(netdev, &tap)?;
                match mknod(&path, SFlag::S_IFCHR, Mode::S_IRUSR | Mode::S_IWUSR, rdev) {
                    Ok(()) => {}
                    // devtmpfs or udev made one meanwhile: look at it again.
                    Err(nix::Error::EEXIST) => continue,
                    Err(e) => {
                        let (major, minor) = (major(rdev), minor(rdev));
                        return Err(Error::wrap(
                            format!("mknod {} c {major} {minor}", path.display()),
                            e,
                        ));
                    }
                }
                let node = TapNode {
                    path,
                    tap,
                    rdev,
                    made: true,
                };
                let made = node.clone();
                rollback.push(format!("{} made by hand", node.path.display()), move || {
                    made.remove_if_left_over()
                });
                chown(&node.path, owner, group)?;
                return Ok(node);
            }
        }
    }
}

/// CHECK: `/dev/tap<index>` is the node of macvtap `netdev`, owned by `owner`:`group`.
pub fn check_node(netdev: &str, index: u32, owner: u32, group: u32) -> Result<()> {
    let path = node_path(index);
    let shown = path.display();
    let fail = |msg: String| Err(Error::system(msg));
    match inspect(&path)? {
        Node::Missing => fail(format!("{shown} does not exist")),
        Node::Other => fail(format!("{shown} is not a character device")),
        Node::Char { owner: None, .. } => fail(format!("{shown} is the node of no device")),
        Node::Char {
            owner: Some(dev), ..
        } if dev.netdev != netdev || dev.tap != format!("tap{index}") => fail(format!(
            "{shown} is the node of {} {}, not of {netdev}",
            dev.netdev, dev.tap
        )),
        Node::Char { .. } => {
            let meta = fs::metadata(&path).with_context(|| format!("stat {shown}"))?;
            if (meta.uid(), meta.gid()) != (owner, group) {
                return fail(format!(
                    "{shown} is owned by {}:{}, configured {owner}:{group}",
                    meta.uid(),
                    meta.gid()
                ));
            }
            Ok(())
        }
    }
}

/// DEL: the node of macvtap `netdev` before the macvtap is deleted, if `/dev/tap<index>` is its.
pub fn node_of(netdev: &str, index: u32) -> Option<TapNode> {
    let path = node_path(index);
    let tap = format!("tap{index}");
    match inspect(&path).ok()? {
        Node::Char {
            rdev,
            owner: Some(dev),
        } if dev.netdev == netdev && dev.tap == tap => Some(TapNode {
            path,
            tap,
            rdev,
            made: false,
        }),
        _ => None,
    }
}

/// GC, and DEL of a namespace that is gone: removes every `/dev/tap<N>` of the macvtap driver
/// whose device no longer exists. devtmpfs takes its own nodes away with their device, so these
/// were made by hand, by an ADD whose macvtap then died with its namespace before DEL. Left
/// there, one keeps devtmpfs from making the node of the next macvtap with that index, and a
/// plugin that trusts devtmpfs (macvtap-cni, after a node switches back) would hand it to qemu.
pub fn remove_stale_nodes() -> Result<()> {
    // No macvtap driver, no macvtap numbers to judge.
    let Ok(macvtap) = macvtap_major() else {
        return Ok(());
    };
    if !Path::new(SYS_DEV_CHAR).is_dir() {
        return Ok(());
    }
    let entries = fs::read_dir(DEV_DIR).with_context(|| format!("listing {DEV_DIR}"))?;
    let mut teardown = Teardown::new();
    for entry in entries.flatten() {
        if !entry.file_name().to_str().is_some_and(is_tap_name) {
            continue;
        }
        let path = entry.path();
        if let Some(Node::Char { rdev, owner: None }) = teardown.step(inspect(&path)) {
            if major(rdev) == macvtap && teardown.step(remove(&path)).is_some() {
                cni_common::log::collected(format_args!(
                    "{}, whose device is gone",
                    path.display()
                ));
            }
        }
    }
    teardown.finish()
}

/// What is at a node's path.
enum Node {
    Missing,
    /// A character device: its number and, if the number belongs to a live device, that device.
    Char {
        rdev: u64,
        owner: Option<CharDevice>,
    },
    Other,
}

fn inspect(path: &Path) -> Result<Node> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Node::Missing),
        Err(e) => return Err(Error::wrap(format!("stat {}", path.display()), e)),
    };
    if !meta.file_type().is_char_device() {
        return Ok(Node::Other);
    }
    let rdev = meta.rdev();
    Ok(Node::Char {
        rdev,
        owner: char_device(major(rdev), minor(rdev)),
    })
}

/// A live character device as /sys/dev/char/<major>:<minor> names it. A tap's link reads
/// `../../devices/virtual/net/<netdev>/macvtap/tap<N>`.
#[derive(Debug)]
struct CharDevice {
    sysfs_path: String,
    netdev: String,
    tap: String,
}

impl CharDevice {
    fn is_tap(&self) -> bool {
        is_tap_name(&self.tap)
    }
}

/// `tap<N>`: the name of a tap device and of its node.
fn is_tap_name(name: &str) -> bool {
    name.strip_prefix("tap")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn char_device(major: u64, minor: u64) -> Option<CharDevice> {
    let link = Path::new(SYS_DEV_CHAR).join(format!("{major}:{minor}"));
    let target = fs::read_link(link).ok()?;
    let sysfs_path = target.to_string_lossy().into_owned();
    let mut parts = sysfs_path.rsplit('/');
    let tap = parts.next().unwrap_or_default().to_string();
    let _class = parts.next();
    let netdev = parts.next().unwrap_or_default().to_string();
    Some(CharDevice {
        sysfs_path,
        netdev,
        tap,
    })
}

/// The device number of macvtap `netdev`'s tap: the one macvtap-major entry of /sys/dev/char
/// whose link names them. Reads one link per macvtap on the node.
fn device_number(netdev: &str, tap: &str) -> Result<u64> {
    let major = macvtap_major()?;
    let prefix = format!("{major}:");
    let entries = fs::read_dir(SYS_DEV_CHAR).with_context(|| format!("listing {SYS_DEV_CHAR}"))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(minor) = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|m| m.parse::<u64>().ok())
        else {
            continue;
        };
        if char_device(major, minor).is_some_and(|d| d.netdev == netdev && d.tap == tap) {
            return Ok(makedev(major, minor));
        }
    }
    Err(Error::system(format!(
        "macvtap {netdev} has no character device {tap} in {SYS_DEV_CHAR}"
    )))
}

/// The macvtap driver's major number, from /proc/devices (dynamic; listed once the driver is in
/// use, which it is once a macvtap exists).
fn macvtap_major() -> Result<u64> {
    let text =
        fs::read_to_string(PROC_DEVICES).with_context(|| format!("reading {PROC_DEVICES}"))?;
    parse_major(&text, "macvtap")
        .ok_or_else(|| Error::system(format!("{PROC_DEVICES} lists no macvtap character device")))
}

/// The major of character device driver `driver` in /proc/devices' text.
fn parse_major(text: &str, driver: &str) -> Option<u64> {
    text.lines()
        .skip_while(|l| !l.starts_with("Character devices:"))
        .take_while(|l| !l.starts_with("Block devices:"))
        .find_map(|l| {
            let (number, name) = l.trim().split_once(' ')?;
            (name.trim() == driver).then(|| number.parse().ok())?
        })
}

fn chown(path: &Path, owner: u32, group: u32) -> Result<()> {
    std::os::unix::fs::chown(path, Some(owner), Some(group))
        .with_context(|| format!("chown {owner}:{group} {}", path.display()))
}

fn remove(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(Error::wrap(format!("removing {}", path.display()), e))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROC: &str = "Character devices:\n  1 mem\n  4 /dev/vc/0\n246 macvtap\n247 ipvtap\n\n\
                        Block devices:\n  7 loop\n246 macvtap-lookalike\n";

    #[test]
    fn the_macvtap_major_comes_from_the_character_devices() {
        assert_eq!(parse_major(PROC, "macvtap"), Some(246));
        assert_eq!(parse_major(PROC, "ipvtap"), Some(247));
        assert_eq!(parse_major(PROC, "loop"), None);
        assert_eq!(parse_major("", "macvtap"), None);
    }

    #[test]
    fn only_tap_numbers_are_taps() {
        let dev = |tap: &str| CharDevice {
            sysfs_path: String::new(),
            netdev: "net1".into(),
            tap: tap.into(),
        };
        assert!(dev("tap12").is_tap());
        assert!(!dev("tty1").is_tap());
        assert!(!dev("tapx").is_tap());
    }

    #[test]
    fn nodes_are_named_after_the_ifindex() {
        assert_eq!(node_path(42), PathBuf::from("/dev/tap42"));
    }
}
