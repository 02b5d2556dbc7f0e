//! `ioi-run serve`: the Piston-compatible HTTP server (docs/piston-api.md), so existing Piston
//! clients can point at ioi-run instead of a fleet of Piston workers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};

use crate::judge::compile::CompileProfile;
use crate::judge::JudgeOptions;
use crate::server::{Executor, JudgeExecutor, ServeOptions, Server, ShutdownHandle};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Host name or address clients use to reach the server, for the `PISTON_ENDPOINTS` line
    /// [default: the --host address, or 127.0.0.1 when it is every address (0.0.0.0, ::), as
    /// in a container whose port is published on the host's].
    #[arg(long, value_name = "HOST")]
    advertise: Option<String>,
    /// Port to listen on (Piston's default is 2000).
    #[arg(long, default_value_t = 2000, conflicts_with = "ports")]
    port: u16,
    /// Several ports sharing one pool of workers and one compile cache, so that one server is
    /// many Piston endpoints: `2000-2015`, `2000,2001,2005`; 0 picks a free port. The
    /// `PISTON_ENDPOINTS` value is printed at start.
    #[arg(long, value_parser = parse_ports)]
    ports: Option<PortList>,
    /// Executions at once [default: the number of cores].
    #[arg(long, short = 'j', visible_alias = "max-concurrent-requests",
          value_parser = super::job_count)]
    jobs: Option<usize>,
    #[command(flatten)]
    cache: super::CacheArgs,
    /// Requests allowed to wait for an execution; beyond that requests wait up to
    /// --queue-wait for room, then get HTTP 503 [default: 4 × jobs].
    #[arg(long)]
    max_queue: Option<usize>,
    /// Seconds a whole request beyond --max-queue waits for room before HTTP 503.
    /// Keep it below the client's read timeout (open-r1's is 30 s).
    #[arg(long, default_value = "20", value_parser = parse_wait)]
    queue_wait: Duration,
    /// Largest request body; a larger one gets HTTP 413 at once (`512M`, `1G`).
    #[arg(long, default_value = "512M", value_parser = super::parse_size)]
    max_body: u64,
    /// Memory for request bodies held at once, over all requests; requests wait for room.
    #[arg(long, default_value = "2G", value_parser = super::parse_size)]
    max_buffered: u64,
    /// Seconds a client may take to send a whole request body before HTTP 408; it holds no
    /// slot meanwhile (its head must arrive within 30 s).
    #[arg(long, default_value = "60", value_parser = parse_wait)]
    read_timeout: Duration,
    /// Seconds in-flight requests get to finish after SIGTERM/SIGINT before their sandboxes are
    /// killed.
    #[arg(long, default_value = "10", value_parser = super::parse_seconds)]
    grace: Duration,
    /// How submissions are compiled: `reference` (the reference pipeline's flags) or `ioi`
    /// (CMS's, statically linked). The server always uses the native runner, never script
    /// mode (which would show the expected output to the solution).
    #[arg(long, value_enum, default_value_t = CompileProfile::Reference)]
    compile_profile: CompileProfile,
    /// Multiply the time limit of every `cms_ioi` and Codeforces request (CPU, and the wall
    /// limit derived from it) by this factor; from 0.1 to 100. Clients keep their own
    /// `run_timeout`: raise it with the factor.
    #[arg(long, default_value_t = 1.0, value_parser = super::parse_time_scale)]
    time_scale: f64,
}

pub fn run(args: Args) -> Result<i32> {
    allocator_for_a_long_run();
    let jobs = super::jobs_or_default(args.jobs);
    let ports = args
        .ports
        .clone()
        .map_or_else(|| vec![args.port], |list| list.0);
    let addrs = ports
        .iter()
        .map(|&port| resolve(&args.host, port))
        .collect::<Result<Vec<_>>>()?;
    let mut options = ServeOptions::new(addrs[0], jobs);
    options.addrs = addrs;
    options.max_queue = args.max_queue.unwrap_or(4 * jobs);
    options.queue_wait = args.queue_wait;
    options.max_body = args.max_body;
    options.max_buffered = args.max_buffered;
    options.read_timeout = args.read_timeout;
    options.grace = args.grace;
    let executor = make_executor(&args.cache, args.compile_profile, args.time_scale)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("ioi-run-serve")
        .build()
        .context("cannot start the tokio runtime")?;
    let result = runtime.block_on(async {
        let server = Server::start(options.clone(), executor).await?;
        let endpoints: Vec<String> = server
            .local_addrs()
            .iter()
            .map(|addr| endpoint(*addr, args.advertise.as_deref()))
            .collect();
        eprintln!(
            "ioi-run: Piston API on {} ({} jobs, queue {})",
            describe(&endpoints),
            options.jobs,
            options.max_queue
        );
        // verl's `reward_model.sandbox_fusion.url` (docs/run-code-api.md): one URL. Before
        // PISTON_ENDPOINTS, which clients read as the last line before the log.
        eprintln!("SANDBOX_FUSION_URL=http://{}/run_code", server.local_addr());
        eprintln!("PISTON_ENDPOINTS={}", endpoints.join(","));
        tokio::spawn(stop_on_signals(server.shutdown_handle()));
        server.wait().await
    });
    // Executions abandoned after the grace periods must not keep the process alive.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result.map(|()| 0)
}

/// The API base a client uses for a server listening on `addr`: an unspecified address
/// (`0.0.0.0`, `::`) is no address to connect to, so the loopback one stands for it unless
/// `advertise` names the host.
fn endpoint(addr: SocketAddr, advertise: Option<&str>) -> String {
    let host = match (advertise, addr.ip()) {
        (Some(host), _) if host.contains(':') && !host.starts_with('[') => format!("[{host}]"),
        (Some(host), _) => host.to_string(),
        (None, IpAddr::V4(ip)) if ip.is_unspecified() => Ipv4Addr::LOCALHOST.to_string(),
        (None, IpAddr::V6(ip)) if ip.is_unspecified() => format!("[{}]", Ipv6Addr::LOCALHOST),
        (None, IpAddr::V4(ip)) => ip.to_string(),
        (None, IpAddr::V6(ip)) => format!("[{ip}]"),
    };
    format!("http://{host}:{}/api/v2", addr.port())
}

fn describe(endpoints: &[String]) -> String {
    match endpoints {
        [one] => one.clone(),
        [first, .., last] => format!("{} endpoints, {first} … {last}", endpoints.len()),
        [] => "no endpoint".to_string(),
    }
}

/// The executor that judges requests: the native judge with the compile cache options
/// `judge` and `evaluate` take too, and the given compile profile. The server bounds the
/// executions at once, not the executor.
fn make_executor(
    cache: &super::CacheArgs,
    profile: CompileProfile,
    time_scale: f64,
) -> Result<Arc<dyn Executor>> {
    let mut options = JudgeOptions {
        compile_profile: profile,
        time_scale,
        headers_ahead: true,
        ..JudgeOptions::default()
    };
    cache.apply(&mut options);
    let executor =
        JudgeExecutor::new(options).context("cannot start the judge for `ioi-run serve`")?;
    Ok(Arc::new(executor))
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve --host {host}"))?
        .next()
        .ok_or_else(|| anyhow!("--host {host} resolves to no address"))
}

/// The ports of `--ports` (a newtype: clap would take a `Vec` for repeated values).
#[derive(Debug, Clone, PartialEq)]
struct PortList(Vec<u16>);

/// `2000-2015`, `2000,2001`, `2000-2003,2010`; ports 0 (a free one each) may repeat.
fn parse_ports(text: &str) -> Result<PortList, String> {
    let mut ports = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let port = |t: &str| {
            t.trim()
                .parse::<u16>()
                .map_err(|_| format!("invalid port {t:?} in --ports {text:?}"))
        };
        match part.split_once('-') {
            Some((from, to)) => {
                let (from, to) = (port(from)?, port(to)?);
                if from > to || from == 0 {
                    return Err(format!("invalid port range {part:?} in --ports {text:?}"));
                }
                ports.extend(from..=to);
            }
            None => ports.push(port(part)?),
        }
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = ports.iter().find(|&&p| p != 0 && !seen.insert(p)) {
        return Err(format!("port {twice} is listed twice in --ports {text:?}"));
    }
    if ports.is_empty() {
        return Err("--ports needs at least one port, e.g. 2000-2015".to_string());
    }
    Ok(PortList(ports))
}

/// A wait in seconds; 0 answers 503 at once.
fn parse_wait(text: &str) -> Result<Duration, String> {
    match text.trim().trim_end_matches('s').parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(Duration::from_secs_f64(v)),
        _ => Err(format!(
            "expected a number of seconds (0 or more), got {text:?}"
        )),
    }
}

/// glibc's allocator set for a server that runs for days, before its threads start (the
/// third setting, returning free memory every 256 requests, is in `server::http`):
/// - every heap block of 64 KiB or more gets a mapping of its own, returned to the system when
///   freed. glibc raises that threshold each time such a block is freed (up to 32 MiB), after
///   which a server's large blocks (checkers' feedback and compilers' messages of tens of KiB to
///   a megabyte, request bodies, answers) come from its heaps, where they leave holes between
///   blocks still live (the verdict cache keeps some for a while) that are never given back: in
///   `bench soak` the server grew 9 to 50 % over the second half of 30 000 and 40 000 requests
///   while its live heap stayed near 85 MiB (docs/benchmarks.md#a-training-run-of-requests);
/// - at most four heaps: by default every thread that allocates may get one (up to eight a
///   core), and memory freed in one heap is reused only there. The server's allocations are
///   small and short (a request, a response), so four heaps do not contend.
fn allocator_for_a_long_run() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets parameters of the allocator, under its own lock.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 10);
        libc::mallopt(libc::M_ARENA_MAX, 4);
    }
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
            say("ioi-run: shutting down, finishing in-flight requests (signal again to abort)");
            shutdown.shutdown();
        }
    }
    say("ioi-run: aborting in-flight requests");
    crate::judge::stop::request();
    ioi_sandbox::abort_all();
    std::process::exit(130);
}

/// A line on stderr that cannot panic: with stderr a closed pipe (a log shipper gone),
/// `eprintln!` would panic and the shutdown would never happen.
fn say(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_an_address_a_client_can_connect_to() {
        let any: SocketAddr = "0.0.0.0:2000".parse().unwrap();
        assert_eq!(endpoint(any, None), "http://127.0.0.1:2000/api/v2");
        assert_eq!(endpoint(any, Some("judge-7")), "http://judge-7:2000/api/v2");
        let any6: SocketAddr = "[::]:2001".parse().unwrap();
        assert_eq!(endpoint(any6, None), "http://[::1]:2001/api/v2");
        assert_eq!(
            endpoint(any6, Some("fd00::7")),
            "http://[fd00::7]:2001/api/v2"
        );
        let one: SocketAddr = "10.0.0.5:2000".parse().unwrap();
        assert_eq!(endpoint(one, None), "http://10.0.0.5:2000/api/v2");
    }

    #[test]
    fn port_lists_and_ranges_parse() {
        let ports = |text| parse_ports(text).map(|list| list.0);
        assert_eq!(ports("2000-2003"), Ok(vec![2000, 2001, 2002, 2003]));
        assert_eq!(
            ports("2000,2005, 2010-2011"),
            Ok(vec![2000, 2005, 2010, 2011])
        );
        assert_eq!(ports("0,0"), Ok(vec![0, 0]));
        assert!(parse_ports("2003-2000").unwrap_err().contains("range"));
        assert!(parse_ports("2000,2000").unwrap_err().contains("twice"));
        assert!(parse_ports("http").unwrap_err().contains("invalid port"));
        assert!(parse_ports("").is_err());
    }

    #[test]
    fn serve_takes_the_shared_options_and_refuses_zero_jobs() {
        use clap::Parser;
        let parse = |args: &[&str]| crate::cli::Cli::try_parse_from(args);
        let ok = parse(&[
            "ioi-run",
            "serve",
            "--ports",
            "2000-2003",
            "-j",
            "3",
            "--cache-dir",
            "/c",
        ]);
        assert!(ok.is_ok(), "{ok:?}");
        let zero = parse(&["ioi-run", "serve", "--jobs", "0"])
            .unwrap_err()
            .to_string();
        assert!(zero.contains("at least 1"), "{zero}");
        let zero = parse(&["ioi-run", "judge", "-j", "0", "p", "s.cpp"])
            .unwrap_err()
            .to_string();
        assert!(zero.contains("at least 1"), "{zero}");
        assert!(parse(&["ioi-run", "serve", "--port", "1", "--ports", "2"]).is_err());
    }
}
