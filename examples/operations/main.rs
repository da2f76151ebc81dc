//! A running service for operators: a handful of breakers (plain and keyed) driven by simulated
//! traffic, some failing in waves so they open and recover, with the admin router (the
//! actuator endpoints and the live dashboard) on 127.0.0.1.
//!
//! ```text
//! cargo run --example operations --features admin                  # http://127.0.0.1:9090/dashboard
//! cargo run --example operations --features admin -- --port 8081
//! cargo run --example operations --features admin -- --breakers 10000   # and 10,000 idle ones
//! ```
//!
//! The breakers: `inventory` (healthy), `payments` (a failure wave of 15 s every minute),
//! `search` (waves of slow calls), `recommendations` (flaky, under its threshold), `shipping`
//! (METRICS_ONLY), `legacyLedger` (DISABLED), and the keyed group `tenantApi` with one breaker
//! per tenant: `tenantApi[acme]`, `tenantApi[globex]` (failure waves), `tenantApi[initech]`,
//! `tenantApi[umbrella]` (always down). `--breakers N` adds N idle breakers `fleet-00000`...,
//! to see the dashboard with many. It runs until stopped (Ctrl-C).

mod sim;

use std::process::exit;

fn main() {
    let mut options = sim::Options {
        port: 9090,
        ..sim::Options::default()
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = match arg.as_str() {
            "--port" | "--breakers" => args.next(),
            "--no-traffic" => {
                options.traffic = false;
                continue;
            }
            other => {
                eprintln!(
                    "unknown argument `{other}`; expected --port N, --breakers N, --no-traffic"
                );
                exit(2);
            }
        };
        let parsed = value.as_deref().and_then(|v| v.parse::<usize>().ok());
        match (arg.as_str(), parsed) {
            ("--port", Some(port)) if port <= usize::from(u16::MAX) => {
                options.port = u16::try_from(port).unwrap_or(0);
            }
            ("--breakers", Some(n)) => options.bulk = n,
            _ => {
                eprintln!("{arg} needs a whole number (a port: 0 to 65535)");
                exit(2);
            }
        }
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("cannot start the Tokio runtime: {err}");
            exit(1);
        }
    };
    runtime.block_on(async {
        let service = match sim::start(&options).await {
            Ok(service) => service,
            Err(err) => {
                eprintln!("cannot listen on 127.0.0.1:{}: {err}", options.port);
                exit(1);
            }
        };
        println!(
            "{} breakers, traffic {}",
            service.registry.breakers().len(),
            if options.traffic { "on" } else { "off" }
        );
        println!("dashboard: {}", service.dashboard_url());
        println!(
            "actuator:  http://{}/actuator/circuitbreakers",
            service.addr
        );
        // Serves until the process is stopped.
        std::future::pending::<()>().await;
    });
}
