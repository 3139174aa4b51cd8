//! The seccomp-bpf filter applied to every sandboxed process.
//!
//! Built with seccompiler: a deny list answered with `EPERM` (everything else allowed), behind
//! a small hand-written prefix that answers `clone3` with `ENOSYS` (so glibc falls back to
//! `clone`, whose namespace flags the deny list can inspect) and refuses x32-ABI syscall
//! numbers. Non-native architectures (e.g. i386 `int 0x80`) kill the process.

use std::collections::BTreeMap;
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

// Classic BPF opcodes (linux/bpf_common.h).
/// BPF_LD | BPF_W | BPF_ABS (0x00 | 0x00 | 0x20).
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10;
const BPF_JMP_JGE_K: u16 = 0x05 | 0x30;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_DATA_NR: u32 = 0;
const SECCOMP_DATA_ARCH: u32 = 4;
/// x32 ABI syscall numbers have this bit set (x86_64 only).
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// A compiled filter, ready to be written to bwrap's `--seccomp` fd or installed directly.
#[derive(Debug, Clone)]
pub struct SeccompProgram {
    filter: Arc<Vec<libc::sock_filter>>,
}

/// Syscalls refused with `EPERM` whatever their arguments.
fn denied_syscalls() -> Vec<libc::c_long> {
    let mut list = vec![
        // Kernel keyrings are not namespaced.
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        // Inspecting or writing other processes.
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_pidfd_getfd,
        libc::SYS_kcmp,
        // Mount table changes.
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_chroot,
        // Namespaces.
        libc::SYS_unshare,
        libc::SYS_setns,
        // Large kernel attack surfaces.
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_bpf,
        libc::SYS_userfaultfd,
        libc::SYS_perf_event_open,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_fanotify_init,
        // Host administration.
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_acct,
        libc::SYS_quotactl,
        libc::SYS_settimeofday,
        libc::SYS_clock_settime,
        libc::SYS_clock_adjtime,
        libc::SYS_adjtimex,
        libc::SYS_syslog,
        libc::SYS_vhangup,
    ];
    #[cfg(target_arch = "x86_64")]
    list.extend([
        libc::SYS_iopl,
        libc::SYS_ioperm,
        libc::SYS_uselib,
        libc::SYS_modify_ldt,
    ]);
    list
}

fn condition(
    arg: u8,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, seccompiler::BackendError> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
}

fn build_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, seccompiler::BackendError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in denied_syscalls() {
        rules.insert(nr, Vec::new());
    }
    // Terminal injection.
    let mut ioctl_rules = Vec::new();
    for request in [libc::TIOCSTI, libc::TIOCLINUX] {
        ioctl_rules.push(SeccompRule::new(vec![condition(
            1,
            SeccompCmpOp::Eq,
            u64::from(request as u32),
        )?])?);
    }
    rules.insert(libc::SYS_ioctl, ioctl_rules);
    // clone() creating namespaces (nested namespaces are also blocked by --disable-userns and
    // missing capabilities; this is defence in depth). clone3 is answered ENOSYS in the prefix.
    let mut clone_rules = Vec::new();
    for flag in [
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWNS,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNET,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWCGROUP,
    ] {
        let flag = u64::from(flag as u32);
        clone_rules.push(SeccompRule::new(vec![condition(
            0,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )?])?);
    }
    rules.insert(libc::SYS_clone, clone_rules);
    Ok(rules)
}

fn audit_arch(arch: TargetArch) -> u32 {
    const LE64: u32 = 0x8000_0000 | 0x4000_0000;
    match arch {
        TargetArch::x86_64 => 62 | LE64,
        TargetArch::aarch64 => 183 | LE64,
        TargetArch::riscv64 => 243 | LE64,
    }
}

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// The hand-written prefix: clone3 → ENOSYS, x32 numbers → ENOSYS (x86_64), then the
/// seccompiler program (which re-checks the architecture itself).
fn prefix(arch: TargetArch) -> Vec<sock_filter> {
    let enosys = SECCOMP_RET_ERRNO | (libc::ENOSYS as u32);
    let clone3 = libc::SYS_clone3 as u32;
    let mut prefix = vec![
        // 0: A = arch
        stmt(BPF_LD_W_ABS, SECCOMP_DATA_ARCH),
        // 1: if A != native: skip the prefix (to the end of it)
        jump(BPF_JMP_JEQ_K, audit_arch(arch), 0, 0),
        // 2: A = nr
        stmt(BPF_LD_W_ABS, SECCOMP_DATA_NR),
        // 3: if A == clone3 → 4 else → 5
        jump(BPF_JMP_JEQ_K, clone3, 0, 1),
        // 4: return ENOSYS
        stmt(BPF_RET_K, enosys),
    ];
    if arch == TargetArch::x86_64 {
        // 5: if A >= x32 bit → 6 else → 7
        prefix.push(jump(BPF_JMP_JGE_K, X32_SYSCALL_BIT, 0, 1));
        // 6: return ENOSYS
        prefix.push(stmt(BPF_RET_K, enosys));
    }
    // Patch instruction 1's false branch to jump past the prefix.
    let skip = prefix.len() - 2;
    prefix[1].jf = skip as u8;
    prefix
}

impl SeccompProgram {
    /// Compiles the filter for the running architecture.
    pub fn build() -> Result<Self, String> {
        let arch = TargetArch::try_from(std::env::consts::ARCH)
            .map_err(|e| format!("no seccomp filter for this architecture: {e}"))?;
        let rules = build_rules().map_err(|e| format!("seccomp rules: {e}"))?;
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )
        .map_err(|e| format!("seccomp filter: {e}"))?;
        let body: BpfProgram =
            BpfProgram::try_from(filter).map_err(|e| format!("seccomp compile: {e}"))?;
        let mut program = prefix(arch);
        program.extend(body);
        if program.len() > 4096 {
            return Err("seccomp program too long".to_owned());
        }
        let filter = program
            .into_iter()
            .map(|ins| libc::sock_filter {
                code: ins.code,
                jt: ins.jt,
                jf: ins.jf,
                k: ins.k,
            })
            .collect();
        Ok(Self {
            filter: Arc::new(filter),
        })
    }

    /// The program as the raw `struct sock_filter` array bwrap reads from `--seccomp FD`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.filter.len() * 8);
        for ins in self.filter.iter() {
            bytes.extend_from_slice(&ins.code.to_ne_bytes());
            bytes.push(ins.jt);
            bytes.push(ins.jf);
            bytes.extend_from_slice(&ins.k.to_ne_bytes());
        }
        bytes
    }

    /// Instructions, shared (used to install the filter in a pre-exec hook).
    pub fn instructions(&self) -> Arc<Vec<libc::sock_filter>> {
        Arc::clone(&self.filter)
    }

    /// A fresh, rewound, close-on-exec memfd holding [`SeccompProgram::to_bytes`].
    pub fn to_memfd(&self) -> std::io::Result<OwnedFd> {
        let name = c"xmemo-seccomp";
        // SAFETY: memfd_create takes a valid NUL-terminated name and flags; it returns a new
        // fd or -1, which is checked before the fd is owned.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd was just returned by memfd_create and is owned by nobody else.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut file = std::fs::File::from(owned);
        file.write_all(&self.to_bytes())?;
        file.seek(SeekFrom::Start(0))?;
        Ok(OwnedFd::from(file))
    }
}

/// Installs `filter` on the calling thread after setting no_new_privs. Async-signal-safe (no
/// allocation): meant for a `pre_exec` hook.
///
/// # Safety
/// Must only be called in a freshly forked child before `exec`.
pub unsafe fn install_in_child(filter: &[libc::sock_filter]) -> std::io::Result<()> {
    let prog = libc::sock_fprog {
        len: filter.len() as libc::c_ushort,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: plain prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: prog points to a live, correctly sized sock_filter array for the whole call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &prog as *const libc::sock_fprog,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_for_this_arch() {
        let program = SeccompProgram::build().expect("filter builds");
        let bytes = program.to_bytes();
        assert_eq!(bytes.len() % 8, 0);
        assert!(bytes.len() > 8 * 20);
    }

    #[test]
    fn prefix_jumps_land_after_prefix() {
        for arch in [TargetArch::x86_64, TargetArch::aarch64] {
            let p = prefix(arch);
            // Non-native arch: from instruction 1, false branch lands on the first instruction
            // after the prefix.
            assert_eq!(1 + 1 + usize::from(p[1].jf), p.len());
            // clone3 test: false branch skips exactly the return.
            assert_eq!(p[3].jf, 1);
            assert_eq!(p[4].k, SECCOMP_RET_ERRNO | libc::ENOSYS as u32);
        }
        assert_eq!(prefix(TargetArch::x86_64).len(), 7);
        assert_eq!(prefix(TargetArch::aarch64).len(), 5);
    }

    #[test]
    fn memfd_holds_the_program() {
        use std::io::Read;
        let program = SeccompProgram::build().expect("filter builds");
        let fd = program.to_memfd().expect("memfd");
        let mut file = std::fs::File::from(fd);
        let mut read = Vec::new();
        file.read_to_end(&mut read).expect("read back");
        assert_eq!(read, program.to_bytes());
    }
}
