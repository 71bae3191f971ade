//! The command line of `outrigger`: every subcommand's flags, and the post-processing that gives
//! each long flag its other spelling.
//!
//! Flags parse into plain values ([`values`]: durations, the native-sidecar mode); the man pages
//! (`outrigger man`) are rendered from this very definition. Behaviour belongs in the subcommand
//! modules, not here.

pub mod common;
pub use outrigger_kube::defaults;
pub mod values;

use clap::{Parser, Subcommand};

/// Fast, Istio-compatible Kubernetes sidecar injector.
#[derive(Debug, Parser)]
#[command(name = "outrigger", version, about)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inject sidecars into Kubernetes manifests (like `istioctl kube-inject`).
    Inject(crate::inject::args::InjectArgs),
    /// Run the HTTPS mutating admission webhook (like istiod's `/inject`).
    Serve(Box<crate::serve::args::ServeArgs>),
    /// Print the MutatingWebhookConfiguration that routes pods to the injector (Istio chart's).
    WebhookConfig(crate::webhook_config::args::WebhookConfigArgs),
    /// Explain whether a pod or workload would be injected, and why.
    Check(crate::check::args::CheckArgs),
    /// Tell which injected workloads of manifests, or pods of the cluster (--kube), differ from
    /// what the configuration in force injects (current, stale, wrong-revision,
    /// missing-sidecar, unwanted-sidecar), and how.
    Drift(crate::drift::args::DriftArgs),
    /// Examine an install in the cluster: a verdict per check (webhook selection and overlaps,
    /// endpoints, caBundle, certificate expiry, timeouts, failurePolicy, RBAC) and an end-to-end
    /// dry-run probe; exit status 1 when a check fails.
    Doctor(crate::doctor::args::DoctorArgs),
    /// Preview a candidate configuration (another revision's ConfigMaps, or files) on the
    /// workloads of manifests or of the cluster (--kube): what changes, field by field, and what
    /// the cluster would refuse (Pod Security, LimitRange, ResourceQuota, native sidecars on
    /// old kubelets, duplicate container names, templates that fail).
    Preview(crate::preview::args::PreviewArgs),
    /// Print the version, the git commit and the Istio versions the injector was verified against
    /// (`-o json` or `-o yaml`: also the build's Rust version and target, the Istio releases
    /// and Kubernetes versions verified).
    Version(crate::version::VersionArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completion {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff): `outrigger man > outrigger.1`, `outrigger man inject`, or write
    /// them all with `--dir`.
    Man(crate::man::ManArgs),
}

/// The note every command's help ends with (the counterparts are hidden aliases, so that
/// `--help` lists each flag once).
pub const ALIAS_NOTE: &str = "Every long flag also accepts its other spelling, camelCase (as \
istioctl) or kebab-case: --caBundleFile or --ca-bundle-file, --injectConfigFile or \
--inject-config-file.";

/// The full command: the derived definition with [`with_counterpart_aliases`] applied. Parse
/// with this, never with `Cli::parse()`, or the aliases are missing.
pub fn command() -> clap::Command {
    with_counterpart_aliases(<Cli as clap::CommandFactory>::command(), false)
}

/// The command for shell completion scripts: the same, with the counterparts as visible
/// aliases so that both spellings complete.
pub fn completion_command() -> clap::Command {
    with_counterpart_aliases(<Cli as clap::CommandFactory>::command(), true)
}

/// Give every long flag of `cmd` and of all its subcommands (recursively) an alias in the other
/// spelling ([`counterpart`]): camelCase for kebab-case flags, kebab-case for camelCase ones;
/// hidden from help unless `visible`. A counterpart that is already the long name or an alias
/// of some flag of the same command is left alone (no flag is shadowed). Every command with
/// such a flag ends its help with [`ALIAS_NOTE`].
pub fn with_counterpart_aliases(cmd: clap::Command, visible: bool) -> clap::Command {
    let taken: Vec<String> = cmd
        .get_arguments()
        .flat_map(|a| {
            a.get_long().into_iter().map(str::to_string).chain(
                a.get_all_aliases()
                    .into_iter()
                    .flatten()
                    .map(str::to_string),
            )
        })
        .collect();
    let cmd = cmd.mut_args(|arg| {
        let Some(long) = arg.get_long() else {
            return arg;
        };
        match counterpart(long) {
            Some(other) if !taken.contains(&other) && visible => arg.visible_alias(other),
            Some(other) if !taken.contains(&other) => arg.alias(other),
            _ => arg,
        }
    });
    let cmd = if cmd
        .get_arguments()
        .any(|a| a.get_long().is_some_and(|l| counterpart(l).is_some()))
    {
        cmd.after_help(ALIAS_NOTE)
    } else {
        cmd
    };
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    names.iter().fold(cmd, |cmd, name| {
        cmd.mut_subcommand(name, |sub| with_counterpart_aliases(sub, visible))
    })
}

/// The other spelling of a long flag: `caBundleFile` → `ca-bundle-file`, `ca-bundle-file` →
/// `caBundleFile`; `None` for a flag spelled the same both ways (`port`) or mixing the two
/// styles (`some-Flag`).
pub fn counterpart(long: &str) -> Option<String> {
    let has_dash = long.contains('-');
    let has_upper = long.chars().any(|c| c.is_ascii_uppercase());
    match (has_dash, has_upper) {
        (true, false) => {
            let mut out = String::with_capacity(long.len());
            let mut upper = false;
            for c in long.chars() {
                if c == '-' {
                    upper = true;
                } else if upper {
                    out.push(c.to_ascii_uppercase());
                    upper = false;
                } else {
                    out.push(c);
                }
            }
            (!long.starts_with('-') && !long.ends_with('-') && !long.contains("--")).then_some(out)
        }
        (false, true) => {
            let mut out = String::with_capacity(long.len() + 4);
            for (i, c) in long.chars().enumerate() {
                if c.is_ascii_uppercase() {
                    if i > 0 {
                        out.push('-');
                    }
                    out.push(c.to_ascii_lowercase());
                } else {
                    out.push(c);
                }
            }
            Some(out)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::parser::ValueSource;
    use clap::FromArgMatches;

    #[test]
    fn counterparts_of_both_spellings() {
        for (a, b) in [
            ("caBundleFile", "ca-bundle-file"),
            ("injectConfigFile", "inject-config-file"),
            ("tlsCertFile", "tls-cert-file"),
            ("enable-namespaces-by-default", "enableNamespacesByDefault"),
            ("dns-name", "dnsName"),
        ] {
            assert_eq!(counterpart(a).as_deref(), Some(b), "{a}");
            assert_eq!(counterpart(b).as_deref(), Some(a), "{b}");
        }
        for same in ["port", "kube", "some-Flag", "-x", "a--b", "x-"] {
            assert_eq!(counterpart(same), None, "{same}");
        }
    }

    /// `cmd` with `ignore_errors` on it and every subcommand (required flags may be omitted).
    fn lenient(cmd: clap::Command) -> clap::Command {
        let names: Vec<String> = cmd
            .get_subcommands()
            .map(|s| s.get_name().to_string())
            .collect();
        let cmd = cmd.ignore_errors(true);
        names
            .iter()
            .fold(cmd, |cmd, n| cmd.mut_subcommand(n, lenient))
    }

    /// Every (subcommand path, flag) of the tree with a long name.
    fn flags(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<(Vec<String>, clap::Arg)>) {
        for arg in cmd.get_arguments() {
            if arg.get_long().is_some() {
                out.push((path.clone(), arg.clone()));
            }
        }
        for sub in cmd.get_subcommands() {
            let mut p = path.clone();
            p.push(sub.get_name().to_string());
            flags(sub, p, out);
        }
    }

    /// Parse `outrigger PATH... FLAG [VALUE]` and give the raw values the flag received, `None`
    /// when the command line did not parse or the flag was not seen on it.
    fn parse(
        path: &[String],
        arg: &clap::Arg,
        flag: &str,
        value: Option<&str>,
    ) -> Option<Vec<String>> {
        let mut argv = vec!["outrigger".to_string()];
        argv.extend(path.iter().cloned());
        argv.push(format!("--{flag}"));
        argv.extend(value.map(str::to_string));
        let matches = lenient(command()).try_get_matches_from(argv).ok()?;
        let mut m = &matches;
        for p in path {
            m = m.subcommand_matches(p)?;
        }
        let id = arg.get_id().as_str();
        if m.value_source(id) != Some(ValueSource::CommandLine) {
            return None;
        }
        Some(
            m.get_raw(id)
                .into_iter()
                .flatten()
                .map(|v| v.to_string_lossy().into_owned())
                .collect(),
        )
    }

    #[test]
    fn every_long_flag_of_every_subcommand_parses_in_both_spellings() {
        let mut all = Vec::new();
        flags(&command(), Vec::new(), &mut all);
        let mut checked = 0;
        for (path, arg) in &all {
            let long = arg.get_long().expect("long flags only");
            let Some(other) = counterpart(long) else {
                continue;
            };
            assert!(
                arg.get_all_aliases()
                    .into_iter()
                    .flatten()
                    .any(|a| a == other),
                "outrigger {} --{long}: no --{other} alias",
                path.join(" ")
            );
            let takes_value = arg.get_num_args().is_none_or(|n| n.takes_values());
            // A value the flag accepts: its first possible value, its default, or one of two
            // generic ones.
            let candidates: Vec<Option<String>> = if !takes_value {
                vec![None]
            } else {
                arg.get_possible_values()
                    .first()
                    .map(|p| p.get_name().to_string())
                    .into_iter()
                    .chain(
                        arg.get_default_values()
                            .iter()
                            .map(|d| d.to_string_lossy().into_owned()),
                    )
                    .chain(["1".to_string(), "x".to_string(), "ns/name".to_string()])
                    .map(Some)
                    .collect()
            };
            let (value, primary) = candidates
                .iter()
                .find_map(|v| parse(path, arg, long, v.as_deref()).map(|p| (v.clone(), p)))
                .unwrap_or_else(|| {
                    panic!("outrigger {} --{long}: no value parses", path.join(" "))
                });
            assert_eq!(
                parse(path, arg, &other, value.as_deref()),
                Some(primary),
                "outrigger {} --{other} {value:?} parses as --{long}",
                path.join(" ")
            );
            checked += 1;
        }
        // inject, serve, webhook-config and check have dozens of two-word flags.
        assert!(checked >= 30, "only {checked} flags checked");
    }

    /// The typed arguments of a full command line, as text.
    fn typed(argv: &[&str]) -> String {
        let m = command()
            .try_get_matches_from(argv)
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        format!("{:?}", Cli::from_arg_matches(&m).expect("typed").command)
    }

    #[test]
    fn istioctl_and_kebab_spellings_give_the_same_arguments() {
        for (a, b) in [
            (
                vec!["outrigger", "webhook-config", "--caBundleFile", "ca.pem"],
                vec!["outrigger", "webhook-config", "--ca-bundle-file", "ca.pem"],
            ),
            (
                vec![
                    "outrigger",
                    "serve",
                    "--ca-bundle-file",
                    "ca.pem",
                    "--tls-cert-file",
                    "c",
                    "--tls-key-file",
                    "k",
                ],
                vec![
                    "outrigger",
                    "serve",
                    "--caBundleFile",
                    "ca.pem",
                    "--tlsCertFile",
                    "c",
                    "--tlsKeyFile",
                    "k",
                ],
            ),
            (
                vec![
                    "outrigger",
                    "inject",
                    "-f",
                    "p.yaml",
                    "--injectConfigFile",
                    "c",
                    "--values-file",
                    "v",
                ],
                vec![
                    "outrigger",
                    "inject",
                    "-f",
                    "p.yaml",
                    "--inject-config-file",
                    "c",
                    "--valuesFile",
                    "v",
                ],
            ),
            (
                vec![
                    "outrigger",
                    "check",
                    "-f",
                    "p.yaml",
                    "--namespaceLabels",
                    "a=b",
                    "--inject-config-map",
                    "ns/cm",
                ],
                vec![
                    "outrigger",
                    "check",
                    "-f",
                    "p.yaml",
                    "--namespace-labels",
                    "a=b",
                    "--injectConfigMap",
                    "ns/cm",
                ],
            ),
        ] {
            assert_eq!(typed(&a), typed(&b), "{a:?} vs {b:?}");
        }
        // The value really arrived (not both defaults).
        assert!(
            typed(&["outrigger", "webhook-config", "--caBundleFile", "ca.pem"])
                .contains("\"ca.pem\"")
        );
    }

    #[test]
    fn help_lists_each_flag_once_and_states_the_rule() {
        let mut cmd = command();
        let help = cmd
            .find_subcommand_mut("webhook-config")
            .expect("subcommand")
            .render_long_help()
            .to_string();
        assert!(help.contains("--ca-bundle-file"), "{help}");
        assert!(!help.contains("--caBundleFile <"), "alias hidden: {help}");
        assert!(help.contains(ALIAS_NOTE), "{help}");
    }
}
