//! Options of the nf_tables socket: how long to wait for the kernel, and how much of its
//! answers the socket can hold before it drops the rest.

use std::os::fd::AsRawFd;
use std::time::Duration;

use netlink_sys::Socket;

use crate::{Error, Result};

pub(crate) fn set_recv_timeout(socket: &Socket, timeout: Duration) -> Result<()> {
    let tv = libc::timeval {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_usec: 0,
    };
    // SAFETY: the fd is the socket's, open for its lifetime; tv lives across the call and its
    // size is passed with it.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(Error::wrap(
            "setting the netlink socket's receive timeout",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// The socket's receive buffer, in bytes, as the kernel accounts it.
pub(crate) fn recv_buffer(socket: &Socket) -> usize {
    let mut size: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the fd is the socket's; size and len live across the call, len holds size's size.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&mut size as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        usize::try_from(size).unwrap_or(0)
    } else {
        0
    }
}

/// Asks for a receive buffer of at least `bytes`. SO_RCVBUFFORCE goes past the system's limit
/// (net.core.rmem_max) with CAP_NET_ADMIN, which changing nf_tables needs anyway; without it,
/// SO_RCVBUF gets as close as the limit allows. Best effort, as for nft: a smaller buffer only
/// loses answers past the first ones, and the caller copes with that.
pub(crate) fn grow_recv_buffer(socket: &Socket, bytes: usize) {
    let size = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    for option in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: the fd is the socket's; size lives across the call and its size is passed.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                option,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            return;
        }
    }
}
