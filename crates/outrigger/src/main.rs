//! outrigger: a fast, Istio-compatible Kubernetes sidecar injector.
//!
//! Subcommands: `inject` (offline manifest injection, flag-compatible with
//! `istioctl kube-inject`).

mod check_cmd;
mod inject_cmd;
mod kube;
mod settings;
mod webhook_config;

use clap::{Parser, Subcommand};

/// Fast, Istio-compatible Kubernetes sidecar injector.
#[derive(Debug, Parser)]
#[command(name = "outrigger", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inject sidecars into Kubernetes manifests (like `istioctl kube-inject`).
    Inject(inject_cmd::InjectArgs),
    /// Print the MutatingWebhookConfiguration that routes pods to the injector (Istio chart's).
    WebhookConfig(webhook_config::WebhookConfigArgs),
    /// Explain whether a pod or workload would be injected, and why.
    Check(check_cmd::CheckArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inject(args) => inject_cmd::run(&args),
        Command::WebhookConfig(args) => webhook_config::run(&args),
        Command::Check(args) => check_cmd::run(&args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
