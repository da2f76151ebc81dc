//! The dashboard page's headers (its Content-Security-Policy, frame and sniffing policies), and
//! the `Host` check: `serve_local` answers only requests addressed to a loopback name, so a page
//! elsewhere whose name resolves to 127.0.0.1 (DNS rebinding, played here by reqwest's
//! `resolve`) reaches nothing, not even a write operation whose hook lets everything through;
//! `allowed_hosts` offers the same check on `router()`.

use std::net::SocketAddr;
use std::time::Duration;

use crate::support::{client, get_text, serve};
use breaker_admin::{Admin, Authorization, LOOPBACK_HOSTS};
use breaker_core::{ManualClock, Registry, State};
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_page_allows_only_its_own_script_style_and_data() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let base = serve(Admin::new(&registry).router()).await;
    let response = client()
        .get(format!("{base}/dashboard"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let headers = response.headers();
    assert_eq!(
        headers["content-security-policy"],
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
         connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    );
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    // The page loads only what the policy allows: its own files, by relative paths.
    let page = response.text().await.unwrap();
    assert!(
        !page.contains("<script>") && !page.contains("style="),
        "nothing inline"
    );
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "nothing elsewhere"
    );
    for asset in ["dashboard.js", "dashboard.css"] {
        let response = client()
            .get(format!("{base}/dashboard/{asset}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    }
}

/// A client that resolves `name` to `address`, as a rebinding DNS answer makes a browser do.
fn resolving(name: &str, address: SocketAddr) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .resolve(name, address)
        .build()
        .unwrap()
}

async fn json_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_local_answers_only_requests_addressed_to_loopback() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let breaker = registry.breaker("inventory");
    // A hook that trusts whoever reaches it, as one might on loopback.
    let admin = Admin::new(&registry).write_operations(|_: &_| Authorization::Allow);
    // A port that was free a moment ago.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    tokio::spawn(admin.serve_local(port));
    let base = format!("http://127.0.0.1:{port}");
    let mut up = false;
    for _ in 0..100 {
        if client().get(&base).send().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(up, "serve_local listens");

    let health = format!("{base}/actuator/health");
    assert_eq!(get_text(&health).await.0, 200, "Host: 127.0.0.1:{port}");
    for host in [
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
        format!("[::1]:{port}"),
        "127.0.0.1".to_owned(),
        "localhost".to_owned(),
    ] {
        let response = client()
            .get(&health)
            .header("host", &host)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "Host: {host}");
    }

    // A page on evil.example, its name resolved to 127.0.0.1: nothing answers, not even the
    // write operation its hook would allow, nor an unknown path.
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let evil = resolving("evil.example", address);
    let at = |path: &str| format!("http://evil.example:{port}{path}");
    let message = "this admin answers only requests addressed to 127.0.0.1, localhost, [::1] \
                   (the Host header): a page elsewhere whose name resolves to this machine (DNS \
                   rebinding) must not reach it";
    let refused = json!({
        "status": 403,
        "error": "Forbidden",
        "message": message,
        "host": format!("evil.example:{port}"),
    });
    for path in ["/actuator/circuitbreakers", "/dashboard", "/nope"] {
        let response = evil.get(at(path)).send().await.unwrap();
        assert_eq!(json_of(response).await, (403, refused.clone()), "{path}");
    }
    let post = evil
        .post(at("/actuator/circuitbreakers/inventory"))
        .header("content-type", "application/json")
        .body(r#"{"updateState":"FORCE_OPEN"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(post).await, (403, refused));
    assert_eq!(breaker.state(), State::Closed, "nothing changed");

    // Names that only look like loopback are other names.
    for host in ["localhost.evil.example", "127.0.0.1.nip.io", "127.0.0.2"] {
        let response = client()
            .get(&health)
            .header("host", host)
            .send()
            .await
            .unwrap();
        let (status, body) = json_of(response).await;
        assert_eq!((status, &body["host"]), (403, &json!(host)), "Host: {host}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_checks_the_hosts_it_is_given() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    registry.breaker("inventory");
    let admin = Admin::new(&registry).allowed_hosts(["Admin.Internal"]);
    let base = serve(admin.router()).await;
    let address: SocketAddr = base.trim_start_matches("http://").parse().unwrap();
    let port = address.port();

    let named = resolving("admin.internal", address);
    let response = named
        .get(format!(
            "http://admin.internal:{port}/actuator/circuitbreakers/inventory"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let (status, body) = get_text(&format!("{base}/actuator/health")).await;
    assert_eq!(
        status, 403,
        "127.0.0.1 is not in this router's list: {body}"
    );

    // Without the call, a router answers whatever its Host; with the loopback list, loopback.
    let open = serve(Admin::new(&registry).router()).await;
    let open_address: SocketAddr = open.trim_start_matches("http://").parse().unwrap();
    let elsewhere = resolving("service.example", open_address);
    let url = format!(
        "http://service.example:{}/actuator/health",
        open_address.port()
    );
    assert_eq!(elsewhere.get(&url).send().await.unwrap().status(), 200);
    let loopback = serve(Admin::new(&registry).allowed_hosts(LOOPBACK_HOSTS).router()).await;
    assert_eq!(
        get_text(&format!("{loopback}/actuator/health")).await.0,
        200
    );
}
