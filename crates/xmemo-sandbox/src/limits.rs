//! Deciding which mechanism enforces each limit, and the rlimits to set (pure).
//!
//! Layering: this plan reads what `cgroup` detected (its version), so `cgroup` never reads the
//! plan; the figures both need are in `shape`.

use crate::cgroup::CgroupVersion;
use crate::shape::{SUPERVISOR_PROCESSES, TMP_BYTES};
use crate::{EnforcedLimit, ExecutionLimits, Isolation, LimitsReport, Mechanism};

/// RLIMIT_FSIZE: largest file a script may write.
pub const FILE_SIZE_BYTES: u64 = 64 << 20;
/// RLIMIT_NOFILE.
pub const OPEN_FILES: u64 = 4096;
/// Extra RLIMIT_NPROC room when the pids cgroup is the real process limit.
pub const NPROC_BACKSTOP_SLACK: u64 = 16;

/// One `setrlimit` to apply in the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rlimit {
    /// `libc::RLIMIT_*`.
    pub resource: libc::__rlimit_resource_t,
    /// Soft limit.
    pub soft: u64,
    /// Hard limit.
    pub hard: u64,
}

/// What the host can enforce for one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// Version of the cgroups used (if any controller is).
    pub cgroup_version: Option<CgroupVersion>,
    /// Memory controller usable.
    pub cgroup_memory: bool,
    /// Pids controller usable.
    pub cgroup_pids: bool,
    /// CPU controller usable.
    pub cgroup_cpu: bool,
    /// The run has a uid of its own (server is root), so RLIMIT_NPROC counts only this run.
    pub dedicated_uid: bool,
    /// A seccomp filter is applied.
    pub seccomp: bool,
    /// Under bubblewrap without a private uid: RLIMIT_NPROC can be set inside the sandbox's
    /// user namespace (prlimit present; Linux >= 5.14 counts processes per namespace).
    pub namespaced_nproc: bool,
}

/// Limits report plus rlimits for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitPlan {
    /// What the result will report.
    pub report: LimitsReport,
    /// rlimits applied to the sandbox's first process (inherited by all).
    pub rlimits: Vec<Rlimit>,
    /// RLIMIT_NPROC to set inside the sandbox (through `prlimit`), when that is the mechanism.
    pub nproc_inside: Option<u64>,
}

impl LimitPlan {
    /// This plan with nothing bounding the process count, and reported so: what
    /// `SandboxConfig::leave_process_limit_unenforced_for_tests` asks for (the caller also
    /// leaves out the pids cgroup).
    pub fn without_process_limit(mut self) -> Self {
        self.rlimits.retain(|r| r.resource != libc::RLIMIT_NPROC);
        self.nproc_inside = None;
        self.report.max_processes =
            EnforcedLimit::new(self.report.max_processes.value, Mechanism::Unenforced)
                .with_note("left unenforced by a test-only engine setting");
        self
    }
}

/// Whether a kernel release (`uname -r`) counts RLIMIT_NPROC per user namespace (5.14+,
/// "ucounts" rlimits), so that a limit set inside the sandbox ignores the server's own
/// processes of the same uid (pure).
pub fn kernel_counts_nproc_per_userns(release: &str) -> bool {
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    match (parts.next(), parts.next()) {
        (Some(major), Some(minor)) => (major, minor) >= (5, 14),
        _ => false,
    }
}

/// CPU-time backstop (RLIMIT_CPU soft limit, seconds) for a wall-clock timeout.
pub fn cpu_backstop_secs(limits: &ExecutionLimits) -> u64 {
    limits.timeout.as_secs_f64().ceil() as u64 * 2 + 5
}

/// Plans the enforcement of `limits` given what the host offers (pure).
pub fn plan(limits: &ExecutionLimits, caps: Capabilities, isolation: Isolation) -> LimitPlan {
    let cgroup = match caps.cgroup_version {
        Some(CgroupVersion::V1) => Mechanism::CgroupV1,
        Some(CgroupVersion::V2) => Mechanism::CgroupV2,
        None => Mechanism::Unenforced,
    };
    let bwrap = isolation == Isolation::Bubblewrap;
    let supervisors = if bwrap { SUPERVISOR_PROCESSES } else { 0 };
    let cpu_secs = cpu_backstop_secs(limits);
    let mut rlimits = vec![
        Rlimit {
            resource: libc::RLIMIT_CORE,
            soft: 0,
            hard: 0,
        },
        Rlimit {
            resource: libc::RLIMIT_FSIZE,
            soft: FILE_SIZE_BYTES,
            hard: FILE_SIZE_BYTES,
        },
        Rlimit {
            resource: libc::RLIMIT_NOFILE,
            soft: OPEN_FILES,
            hard: OPEN_FILES,
        },
        Rlimit {
            resource: libc::RLIMIT_CPU,
            soft: cpu_secs,
            hard: cpu_secs + 5,
        },
    ];

    let timeout_ms = limits.timeout.as_millis().min(u128::from(u64::MAX)) as u64;
    let timeout = EnforcedLimit::new(timeout_ms, Mechanism::Watchdog).with_note(format!(
        "RLIMIT_CPU backstop of {cpu_secs}s CPU time per process"
    ));

    let memory = if caps.cgroup_memory {
        EnforcedLimit::new(limits.memory_bytes, cgroup)
            .with_note("whole sandbox; exceeding it OOM-kills a process")
    } else {
        rlimits.push(Rlimit {
            resource: libc::RLIMIT_AS,
            soft: limits.memory_bytes,
            hard: limits.memory_bytes,
        });
        EnforcedLimit::new(limits.memory_bytes, Mechanism::Rlimit).with_note(
            "RLIMIT_AS per process (address space); allocations fail instead of an OOM kill",
        )
    };

    let cpu = if caps.cgroup_cpu {
        EnforcedLimit::new(limits.cpu_millicores, cgroup)
    } else {
        EnforcedLimit::new(limits.cpu_millicores, Mechanism::Unenforced).with_note(format!(
            "no cpu cgroup: rate not limited; RLIMIT_CPU backstop of {cpu_secs}s per process"
        ))
    };

    let nproc = u64::from(limits.max_processes) + u64::from(supervisors);
    let mut nproc_inside = None;
    let processes = if caps.dedicated_uid {
        // Backstop (or sole mechanism): the uid is private to this run. As a mere backstop it
        // gets some slack, so that zombies of an earlier run of the uid (still counted until
        // the host reaps them) never make it bite before the pids cgroup.
        let nproc = if caps.cgroup_pids {
            nproc + NPROC_BACKSTOP_SLACK
        } else {
            nproc
        };
        rlimits.push(Rlimit {
            resource: libc::RLIMIT_NPROC,
            soft: nproc,
            hard: nproc,
        });
        if caps.cgroup_pids {
            EnforcedLimit::new(limits.max_processes, cgroup)
                .with_note("threads count; RLIMIT_NPROC on the run's own uid as backstop")
        } else {
            EnforcedLimit::new(limits.max_processes, Mechanism::Rlimit)
                .with_note("RLIMIT_NPROC on a uid private to the run; threads count")
        }
    } else if caps.cgroup_pids {
        EnforcedLimit::new(limits.max_processes, cgroup).with_note("threads count")
    } else if bwrap && caps.namespaced_nproc {
        // Inside the user namespace only the sandbox's init and the script's tree count.
        nproc_inside = Some(u64::from(limits.max_processes) + 1);
        EnforcedLimit::new(limits.max_processes, Mechanism::Rlimit)
            .with_note("RLIMIT_NPROC counted inside the sandbox's user namespace; threads count")
    } else {
        EnforcedLimit::new(limits.max_processes, Mechanism::Unenforced).with_note(
            "no pids cgroup and no private uid (server not root): process count not limited",
        )
    };

    let tmp = if bwrap {
        EnforcedLimit::new(TMP_BYTES, Mechanism::Tmpfs).with_note("size of the private /tmp")
    } else {
        EnforcedLimit::new(FILE_SIZE_BYTES, Mechanism::Rlimit)
            .with_note("no private /tmp; RLIMIT_FSIZE caps each file written")
    };

    LimitPlan {
        report: LimitsReport {
            timeout_ms: timeout,
            memory_bytes: memory,
            cpu_millicores: cpu,
            max_processes: processes,
            max_output_bytes: EnforcedLimit::new(
                limits.max_output_bytes as u64,
                Mechanism::OutputCap,
            )
            .with_note("per stream; the rest is drained and counted"),
            tmp_bytes: tmp,
            syscall_filter: if caps.seccomp {
                Mechanism::Seccomp
            } else {
                Mechanism::Unenforced
            },
        },
        rlimits,
        nproc_inside,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(plan: &LimitPlan, resource: libc::__rlimit_resource_t) -> Option<Rlimit> {
        plan.rlimits
            .iter()
            .copied()
            .find(|r| r.resource == resource)
    }

    #[test]
    fn cgroup_v1_everything() {
        let caps = Capabilities {
            cgroup_version: Some(CgroupVersion::V1),
            cgroup_memory: true,
            cgroup_pids: true,
            cgroup_cpu: true,
            dedicated_uid: true,
            seccomp: true,
            namespaced_nproc: false,
        };
        let plan = plan(&ExecutionLimits::default(), caps, Isolation::Bubblewrap);
        assert_eq!(plan.report.memory_bytes.enforced_by, Mechanism::CgroupV1);
        assert_eq!(plan.report.cpu_millicores.enforced_by, Mechanism::CgroupV1);
        assert_eq!(plan.report.max_processes.enforced_by, Mechanism::CgroupV1);
        assert_eq!(plan.report.timeout_ms.enforced_by, Mechanism::Watchdog);
        assert_eq!(plan.report.timeout_ms.value, 30_000);
        assert_eq!(plan.report.syscall_filter, Mechanism::Seccomp);
        assert_eq!(
            plan.report.max_output_bytes.enforced_by,
            Mechanism::OutputCap
        );
        assert!(
            find(&plan, libc::RLIMIT_AS).is_none(),
            "no AS with a memory cgroup"
        );
        assert_eq!(
            find(&plan, libc::RLIMIT_NPROC).map(|r| r.soft),
            Some(34 + 16)
        );
    }

    #[test]
    fn rlimits_only_as_root() {
        let caps = Capabilities {
            dedicated_uid: true,
            seccomp: true,
            ..Capabilities::default()
        };
        let plan = plan(&ExecutionLimits::default(), caps, Isolation::Bubblewrap);
        assert_eq!(plan.report.memory_bytes.enforced_by, Mechanism::Rlimit);
        assert_eq!(plan.report.max_processes.enforced_by, Mechanism::Rlimit);
        assert_eq!(
            plan.report.cpu_millicores.enforced_by,
            Mechanism::Unenforced
        );
        assert_eq!(
            find(&plan, libc::RLIMIT_AS).map(|r| r.hard),
            Some(256 << 20)
        );
        assert_eq!(find(&plan, libc::RLIMIT_CPU).map(|r| r.soft), Some(65));
        assert_eq!(find(&plan, libc::RLIMIT_NPROC).map(|r| r.soft), Some(34));
        assert_eq!(find(&plan, libc::RLIMIT_CORE).map(|r| r.hard), Some(0));
    }

    #[test]
    fn not_root_no_cgroup_is_honest() {
        let plan = plan(
            &ExecutionLimits::default(),
            Capabilities::default(),
            Isolation::UnsafeLocal,
        );
        assert_eq!(plan.report.max_processes.enforced_by, Mechanism::Unenforced);
        assert_eq!(plan.report.syscall_filter, Mechanism::Unenforced);
        assert!(find(&plan, libc::RLIMIT_NPROC).is_none());
        assert_eq!(plan.nproc_inside, None);
    }

    #[test]
    fn not_root_bwrap_counts_inside_the_namespace() {
        let caps = Capabilities {
            seccomp: true,
            namespaced_nproc: true,
            ..Capabilities::default()
        };
        let plan = plan(&ExecutionLimits::default(), caps, Isolation::Bubblewrap);
        assert_eq!(plan.report.max_processes.enforced_by, Mechanism::Rlimit);
        assert_eq!(plan.nproc_inside, Some(33));
        assert!(
            find(&plan, libc::RLIMIT_NPROC).is_none(),
            "not on the shared uid"
        );
        // Not for the local fallback (no namespace).
        let plan = super::plan(&ExecutionLimits::default(), caps, Isolation::UnsafeLocal);
        assert_eq!(plan.report.max_processes.enforced_by, Mechanism::Unenforced);
    }

    #[test]
    fn without_process_limit_removes_every_process_bound() {
        let caps = Capabilities {
            cgroup_version: Some(CgroupVersion::V1),
            cgroup_pids: true,
            dedicated_uid: true,
            seccomp: true,
            ..Capabilities::default()
        };
        let bounded = plan(&ExecutionLimits::default(), caps, Isolation::Bubblewrap);
        assert!(find(&bounded, libc::RLIMIT_NPROC).is_some());
        let unbounded = bounded.clone().without_process_limit();
        assert!(find(&unbounded, libc::RLIMIT_NPROC).is_none());
        assert_eq!(unbounded.nproc_inside, None);
        assert_eq!(
            unbounded.report.max_processes.enforced_by,
            Mechanism::Unenforced
        );
        assert_eq!(unbounded.report.max_processes.value, 32);
        // Every other limit is untouched.
        assert_eq!(unbounded.rlimits.len(), bounded.rlimits.len() - 1);
        assert_eq!(unbounded.report.memory_bytes, bounded.report.memory_bytes);

        let namespaced = Capabilities {
            seccomp: true,
            namespaced_nproc: true,
            ..Capabilities::default()
        };
        let inside = plan(
            &ExecutionLimits::default(),
            namespaced,
            Isolation::Bubblewrap,
        );
        assert_eq!(inside.nproc_inside, Some(33));
        assert_eq!(inside.without_process_limit().nproc_inside, None);
    }

    #[test]
    fn kernel_versions() {
        assert!(kernel_counts_nproc_per_userns("6.18.44-fc-v669"));
        assert!(kernel_counts_nproc_per_userns("5.14.0-284.el9.x86_64"));
        assert!(!kernel_counts_nproc_per_userns("5.10.0-21-amd64"));
        assert!(!kernel_counts_nproc_per_userns("4.19.0"));
        assert!(!kernel_counts_nproc_per_userns("garbage"));
    }

    #[test]
    fn serializes_mechanisms_as_strings() {
        let plan = plan(
            &ExecutionLimits::default(),
            Capabilities {
                cgroup_version: Some(CgroupVersion::V2),
                cgroup_memory: true,
                ..Capabilities::default()
            },
            Isolation::Bubblewrap,
        );
        let json = serde_json::to_value(&plan.report).expect("serializes");
        assert_eq!(json["memory_bytes"]["enforced_by"], "cgroup_v2");
        assert_eq!(json["cpu_millicores"]["enforced_by"], "none");
        assert_eq!(json["timeout_ms"]["enforced_by"], "watchdog");
        assert_eq!(json["max_output_bytes"]["enforced_by"], "output_cap");
    }
}
