//! `ioi-run serve`: the Piston-compatible HTTP server (SPEC §4), so existing Piston clients can
//! point at ioi-run instead of a fleet of Piston workers.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};

use crate::judge::JudgeOptions;
use crate::server::{Executor, JudgeExecutor, ServeOptions, Server, ShutdownHandle};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to listen on (Piston's default is 2000).
    #[arg(long, default_value_t = 2000)]
    port: u16,
    /// Executions at once [default: the number of cores].
    #[arg(long)]
    jobs: Option<usize>,
    /// Requests allowed to wait for an execution; beyond that the server answers HTTP 503
    /// [default: 4 × jobs].
    #[arg(long)]
    max_queue: Option<usize>,
    /// Seconds in-flight requests get to finish after SIGTERM/SIGINT before their sandboxes are
    /// killed.
    #[arg(long, default_value = "10", value_parser = super::parse_seconds)]
    grace: Duration,
}

pub fn run(args: Args) -> Result<i32> {
    let jobs = super::jobs_or_default(args.jobs);
    let addr = resolve(&args.host, args.port)?;
    let mut options = ServeOptions::new(addr, jobs);
    options.max_queue = args.max_queue.unwrap_or(4 * jobs);
    options.grace = args.grace;
    let executor = make_executor(jobs)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("ioi-run-serve")
        .build()
        .context("cannot start the tokio runtime")?;
    let result = runtime.block_on(async {
        let server = Server::start(options.clone(), executor).await?;
        eprintln!(
            "ioi-run: Piston API on http://{}/api/v2 ({} jobs, queue {})",
            server.local_addr(),
            options.jobs,
            options.max_queue
        );
        tokio::spawn(stop_on_signals(server.shutdown_handle()));
        server.wait().await
    });
    // Executions abandoned after the grace periods must not keep the process alive.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result.map(|()| 0)
}

/// The executor that judges requests: the judge with the default compile cache
/// (`$IOI_RUN_CACHE`). `jobs` bounds the executions at once in the server, not here.
pub fn make_executor(_jobs: usize) -> Result<Arc<dyn Executor>> {
    let executor = JudgeExecutor::new(JudgeOptions::default())
        .context("cannot start the judge for `ioi-run serve`")?;
    Ok(Arc::new(executor))
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve --host {host}"))?
        .next()
        .ok_or_else(|| anyhow!("--host {host} resolves to no address"))
}

/// First SIGTERM/SIGINT/SIGHUP: stop accepting and finish in-flight requests. Second: kill every
/// sandboxed run and exit at once.
async fn stop_on_signals(shutdown: ShutdownHandle) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        tracing::warn!("cannot listen for signals: SIGTERM will not shut down gracefully");
        return;
    };
    for round in 0..2 {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            _ = hup.recv() => {}
        }
        if round == 0 {
            eprintln!(
                "ioi-run: shutting down, finishing in-flight requests (signal again to abort)"
            );
            shutdown.shutdown();
        }
    }
    eprintln!("ioi-run: aborting in-flight requests");
    ioi_sandbox::abort_all();
    std::process::exit(130);
}
