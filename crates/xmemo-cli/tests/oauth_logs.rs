//! No secret reaches the logs: the real binary (`xmemo serve`) runs with debug logging while
//! a whole sign-in and OAuth flow goes through it — a failed and a good sign-in, a public and
//! a confidential client, consent, code exchange, an MCP call, a refresh, a revocation — and
//! then it is stopped and its whole output is searched for every secret value of the run.

use serde_json::json;
use xmemo_testkit::browser::Browser;
use xmemo_testkit::oauth::{Request, approve, form, pkce, query_of, register, register_public};

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");
const CB: &str = "http://127.0.0.1:5555/callback";

#[tokio::test]
async fn a_whole_flow_with_debug_logs_leaves_no_secret_in_them() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let server = xmemo_testkit::ServerProcess::start(
        BIN,
        &["--data-dir", data.to_str().expect("utf-8")],
        &[("XMEMO_LOG", "debug")],
    );
    let base = server.url.clone();
    let mut secrets: Vec<(&str, String)> = Vec::new();
    let password = std::fs::read_to_string(data.join("admin.password"))
        .expect("admin.password")
        .trim()
        .to_string();
    let admin_key = std::fs::read_to_string(data.join("admin.key"))
        .expect("admin.key")
        .trim()
        .to_string();
    secrets.push(("admin password", password.clone()));
    secrets.push(("admin key", admin_key.clone()));

    let mut b = Browser::new(&base);
    let wrong = "a-wrong-password-value";
    assert_eq!(
        b.sign_in("admin", wrong, "/login").await.status.as_u16(),
        401
    );
    secrets.push(("wrong password", wrong.to_string()));
    assert_eq!(
        b.sign_in("admin", &password, "/login")
            .await
            .status
            .as_u16(),
        303
    );
    secrets.push(("session cookie", b.session().cloned().expect("session")));

    let public = register_public(&base, "Log Test Host").await;
    let confidential = register(
        &base,
        json!({"client_name": "Log Backend", "redirect_uris": [CB], "token_endpoint_auth_method": "client_secret_post",
               "grant_types": ["authorization_code", "refresh_token"]}),
    )
    .await;
    let conf_id = confidential.body["client_id"].as_str().unwrap().to_string();
    let conf_secret = confidential.body["client_secret"]
        .as_str()
        .unwrap()
        .to_string();
    secrets.push(("client secret", conf_secret.clone()));

    let resource = format!("{base}/mcp");
    for (client_id, secret) in [
        (public.as_str(), None),
        (conf_id.as_str(), Some(conf_secret.as_str())),
    ] {
        let (verifier, challenge) = pkce();
        let back = approve(
            &mut b,
            &Request {
                client_id,
                redirect_uri: CB,
                challenge: &challenge,
                method: "S256",
                scope: "memory:read memory:write",
                state: "log-state",
                resource: Some(&resource),
            },
        )
        .await
        .unwrap_or_else(|p| panic!("consent: {} {}", p.status, p.body));
        let code = query_of(&back)["code"].clone();
        secrets.push(("authorization code", code.clone()));
        secrets.push(("code verifier", verifier.clone()));
        let mut fields = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", CB),
            ("code_verifier", verifier.as_str()),
            ("client_id", client_id),
            ("resource", resource.as_str()),
        ];
        if let Some(s) = secret {
            fields.push(("client_secret", s));
        }
        let tokens = form(&base, "/oauth/token", &fields, None).await;
        assert_eq!(tokens.status, 200, "{}", tokens.body);
        let access = tokens.body["access_token"].as_str().unwrap().to_string();
        let refresh = tokens.body["refresh_token"].as_str().unwrap().to_string();
        secrets.push(("access token", access.clone()));
        secrets.push(("refresh token", refresh.clone()));
        // A reused code too (it revokes the grant, and is logged as such).
        let again = form(&base, "/oauth/token", &fields, None).await;
        assert_eq!(again.status, 400);

        let mcp = reqwest::Client::new()
            .post(format!("{base}/mcp"))
            .bearer_auth(&access)
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .send()
            .await
            .unwrap();
        assert_eq!(mcp.status(), 401, "the reused code revoked this token");
    }

    // A fresh grant: MCP call, refresh, revoke.
    let (verifier, challenge) = pkce();
    let back = approve(
        &mut b,
        &Request {
            client_id: &public,
            redirect_uri: CB,
            challenge: &challenge,
            method: "S256",
            scope: "memory:read memory:write",
            state: "log-state",
            resource: Some(&resource),
        },
    )
    .await
    .unwrap_or_else(|p| panic!("consent: {} {}", p.status, p.body));
    let code = query_of(&back)["code"].clone();
    let tokens = form(
        &base,
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CB),
            ("code_verifier", &verifier),
            ("client_id", &public),
        ],
        None,
    )
    .await;
    assert_eq!(tokens.status, 200, "{}", tokens.body);
    let access = tokens.body["access_token"].as_str().unwrap().to_string();
    let refresh = tokens.body["refresh_token"].as_str().unwrap().to_string();
    secrets.extend([
        ("authorization code", code),
        ("code verifier", verifier),
        ("access token", access.clone()),
        ("refresh token", refresh.clone()),
    ]);
    let mcp = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .bearer_auth(&access)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "remember", "arguments": {"kind": "note", "content": "logged?"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(mcp.status(), 200);
    let fresh = form(
        &base,
        "/oauth/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &public),
        ],
        None,
    )
    .await;
    assert_eq!(fresh.status, 200, "{}", fresh.body);
    let access2 = fresh.body["access_token"].as_str().unwrap().to_string();
    let refresh2 = fresh.body["refresh_token"].as_str().unwrap().to_string();
    secrets.push(("refreshed access token", access2));
    secrets.push(("refreshed refresh token", refresh2.clone()));
    // The rotated token again: family revoked.
    let reused = form(
        &base,
        "/oauth/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &public),
        ],
        None,
    )
    .await;
    assert_eq!(reused.status, 400);
    let revoked = form(
        &base,
        "/oauth/revoke",
        &[("token", &refresh2), ("client_id", &public)],
        None,
    )
    .await;
    assert_eq!(revoked.status, 200);
    // A failed API-key and token lookup are logged as failures, without the value.
    let guess = "xmat_guessed-token-value-0123456789";
    secrets.push(("guessed token", guess.to_string()));
    let _ = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .bearer_auth(guess)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    // Sign out with the session's form token.
    let me = b.get("/login").await;
    let token = me.field("csrf").expect("sign-out token");
    assert_eq!(
        b.post_form("/logout", &[("csrf", &token)])
            .await
            .status
            .as_u16(),
        303
    );

    // Every line the server will ever write, so none is still on its way when searched.
    let output = server.stop_and_collect_logs();
    assert!(output.contains("DEBUG"), "debug logging was on:\n{output}");
    assert!(
        output.lines().count() > 20,
        "the server logged the flow:\n{output}"
    );
    for (what, value) in &secrets {
        assert!(value.len() >= 16, "{what} is a real secret value");
        assert!(
            !output.contains(value.as_str()),
            "the {what} appears in the server's output"
        );
    }
}
