//! The macOS side of the sandbox: a Seatbelt profile (SBPL, the language
//! `/usr/bin/sandbox-exec` reads) holding a command to the same [`Policy`]
//! as Landlock, seccomp and the mount namespace do on Linux.
//!
//! Built and tested on every platform (it is text); only macOS runs it,
//! as `sandbox-exec -p PROFILE -D P0=path … -- bash -c COMMAND`. Paths go
//! in as `-D` parameters, never spliced into the profile, so no path can
//! change what the profile says.
//!
//! SBPL: deny by default, then the allows, then the denies — the last rule
//! that matches an operation decides, so what is hidden or frozen is
//! written after what is readable or writable.

use std::ffi::OsString;
use std::path::PathBuf;

use super::{Policy, Tier};

/// Where `sandbox-exec` is; never looked up on `PATH` (a project could put
/// its own first).
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// What every command may do besides files and the network: run programs,
/// signal and inspect its own processes, read system settings, the Mach
/// services the C library and the command-line tools need (user and group
/// lookup, logging, notifications, certificates), POSIX shared memory and
/// terminals.
const BASE: &str = r#"(version 1)
(deny default)
(allow process-exec process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow file-ioctl)
(allow pseudo-tty)
(allow ipc-posix-shm* ipc-posix-sem)
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.system.opendirectoryd.membership")
  (global-name "com.apple.system.logger")
  (global-name "com.apple.system.notification_center")
  (global-name "com.apple.logd")
  (global-name "com.apple.diagnosticd")
  (global-name "com.apple.trustd")
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.SecurityServer")
  (global-name "com.apple.CoreServices.coreservicesd")
  (global-name "com.apple.cfprefsd.daemon")
  (global-name "com.apple.cfprefsd.agent"))
(allow file-read*)
(allow file-write-data
  (literal "/dev/null")
  (literal "/dev/zero")
  (literal "/dev/tty")
  (literal "/dev/dtracehelper")
  (regex #"^/dev/fd/"))
"#;

/// The profile for `policy` and the `-D` parameters its paths are passed
/// as (`W…` writable, `F…` frozen, `H…` hidden).
pub fn profile(policy: &Policy) -> (String, Vec<(String, PathBuf)>) {
    let mut text = String::from(BASE);
    let mut params = Vec::new();
    let mut rule = |text: &mut String, action: &str, ops: &str, key: char, paths: &[PathBuf]| {
        if paths.is_empty() {
            return;
        }
        text.push_str(&format!("({action} {ops}"));
        for (i, path) in paths.iter().enumerate() {
            let name = format!("{key}{i}");
            text.push_str(&format!("\n  (subpath (param \"{name}\"))"));
            params.push((name, path.clone()));
        }
        text.push_str(")\n");
    };
    if policy.tier == Tier::Workspace {
        rule(&mut text, "allow", "file-write*", 'W', &policy.writable);
        rule(&mut text, "deny", "file-write*", 'F', &policy.frozen);
    }
    if policy.network {
        text.push_str("(allow network*)\n");
    }
    rule(
        &mut text,
        "deny",
        "file-read* file-write*",
        'H',
        &policy.hidden,
    );
    (text, params)
}

/// `sandbox-exec`'s arguments before the command it runs: the profile,
/// its parameters and `--`.
pub fn arguments(policy: &Policy) -> Vec<OsString> {
    let (text, params) = profile(policy);
    let mut args: Vec<OsString> = vec!["-p".into(), text.into()];
    for (name, path) in params {
        let mut d = OsString::from(format!("-D{name}="));
        d.push(path.as_os_str());
        args.push(d);
    }
    args.push("--".into());
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(tier: Tier, network: bool) -> Policy {
        Policy {
            tier,
            writable: vec!["/w/p".into(), "/private/tmp".into()],
            hidden: vec!["/w/p/.env".into(), "/w/p/secret".into()],
            frozen: vec!["/w/p/.git/hooks".into()],
            network,
        }
    }

    #[test]
    fn a_read_only_command_writes_nothing_and_cannot_read_what_is_hidden() {
        let (text, params) = profile(&policy(Tier::ReadOnly, false));
        assert!(text.starts_with("(version 1)\n(deny default)\n"), "{text}");
        assert!(!text.contains("(allow file-write*"), "{text}");
        assert!(
            !text.contains("network"),
            "no network rule: denied by default"
        );
        assert!(text.ends_with(
            "(deny file-read* file-write*\n  (subpath (param \"H0\"))\n  (subpath (param \"H1\")))\n"
        ));
        assert_eq!(
            params,
            [
                ("H0".to_string(), PathBuf::from("/w/p/.env")),
                ("H1".to_string(), PathBuf::from("/w/p/secret")),
            ]
        );
    }

    #[test]
    fn a_workspace_command_writes_where_allowed_but_not_in_frozen_or_hidden_paths() {
        let (text, params) = profile(&policy(Tier::Workspace, true));
        let write = text.find("(allow file-write*\n").unwrap();
        let frozen = text.find("(deny file-write*\n").unwrap();
        let hidden = text.find("(deny file-read* file-write*\n").unwrap();
        assert!(
            write < frozen && frozen < hidden,
            "the last matching rule wins: denies come after the allows\n{text}"
        );
        assert!(text.contains("(allow network*)"), "{text}");
        let names: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["W0", "W1", "F0", "H0", "H1"]);
    }

    #[test]
    fn paths_are_parameters_never_profile_text() {
        let mut p = policy(Tier::Workspace, false);
        p.writable = vec![PathBuf::from("/w/\")) (allow default) ((\"")];
        let args = arguments(&p);
        assert_eq!(args[0], "-p");
        let text = args[1].to_string_lossy();
        assert!(!text.contains("allow default"), "{text}");
        assert_eq!(args[2], OsString::from("-DW0=/w/\")) (allow default) ((\""));
        assert_eq!(args.last().unwrap(), "--");
    }
}
