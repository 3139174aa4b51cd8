//! `--console`: the Memory Console's pages at N skills (the smallest of --sizes, 10,000 by
//! default). Seeds the skills through REST like the skill benchmark, signs in as the admin
//! (the first-start password), then requests each page sequentially and prints p50/p99 per
//! page next to the 50 ms p99 target (issue 13, docs/benchmarks.md "Console pages").

use crate::corpus::Corpus;
use crate::load;
use crate::measure::Latency;
use crate::percent::encode;
use crate::server::Server;
use anyhow::{Context, Result, bail};
use std::sync::Arc;
use std::time::Instant;

/// Requests per page (after a few warm-up requests).
const REQUESTS: usize = 200;
const WARMUP: usize = 10;
const TARGET_P99_MS: f64 = 50.0;

fn cookie_of(resp: &reqwest::Response, name: &str) -> Option<String> {
    resp.headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.split(';').next())
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

fn field(html: &str, name: &str) -> Option<String> {
    let at = html.find(&format!("name=\"{name}\" value=\""))?;
    let rest = &html[at + name.len() + 15..];
    Some(rest[..rest.find('"')?].to_string())
}

/// Signs in with the admin's first-start password; the session cookie.
async fn sign_in(http: &reqwest::Client, srv: &Server) -> Result<String> {
    let password = std::fs::read_to_string(srv.data_dir.join("admin.password"))
        .context("admin.password (the console benchmark needs a fresh data directory)")?;
    let form = http.get(format!("{}/login", srv.base_url)).send().await?;
    let login = cookie_of(&form, "xmemo_login").context("no sign-in form cookie")?;
    let csrf = field(&form.text().await?, "csrf").context("no form token")?;
    let resp = http
        .post(format!("{}/login", srv.base_url))
        .header("cookie", format!("xmemo_login={login}"))
        .header("origin", &srv.base_url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "handle=admin&password={}&next=%2Fconsole&csrf={}",
            encode(password.trim()),
            encode(&csrf)
        ))
        .send()
        .await?;
    cookie_of(&resp, "xmemo_session").context("sign-in gave no session")
}

pub async fn run(
    srv: &Server,
    corpus: Arc<Corpus>,
    skills: usize,
    concurrency: usize,
) -> Result<()> {
    eprintln!("xmemo-bench: console — seeding {skills} skills with {concurrency} clients");
    let seed = load::seed(
        &srv.base_url,
        &srv.admin_key,
        corpus.clone(),
        0,
        skills,
        concurrency,
        srv.pid,
    )
    .await?;
    eprintln!(
        "  {} saves in {:.1} s, {} errors",
        seed.saves, seed.secs, seed.errors.count
    );
    let (slug, first) = corpus.skill(0);
    // A second revision of one skill, for its diff and timeline.
    let mut second = first.clone();
    second["instruction_body"] = serde_json::Value::String(format!(
        "{}\nOne more step.\n",
        first["instruction_body"].as_str().unwrap_or_default()
    ));
    let http = load::client()?;
    let saved = http
        .post(format!("{}/api/v1/skills", srv.base_url))
        .bearer_auth(&srv.admin_key)
        .json(&second)
        .send()
        .await?;
    if !saved.status().is_success() {
        bail!("second revision: {}", saved.status());
    }
    // The sign-in answer is a redirect whose Set-Cookie must be read, not followed.
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let session = sign_in(&no_redirects, srv).await?;
    let query = slug.split('-').next().unwrap_or("deploy").to_string();
    let pages: Vec<(&str, String)> = vec![
        ("skills (list, first page)", "/console/skills".into()),
        ("skills (search)", format!("/console/skills?q={query}")),
        ("skill", format!("/console/skill?ws=personal&slug={slug}")),
        (
            "diff",
            format!("/console/skill/diff?ws=personal&slug={slug}"),
        ),
        (
            "editor (new revision)",
            format!("/console/skill/edit?ws=personal&slug={slug}"),
        ),
        ("editor (new skill)", "/console/skills/new".into()),
        ("import", "/console/import".into()),
        ("memories", "/console/memories".into()),
        ("API keys", "/console/keys".into()),
        ("OAuth grants", "/console/grants".into()),
        ("teams", "/console/members".into()),
        ("account", "/console/account".into()),
        ("connect a client", "/console/connect".into()),
    ];
    println!(
        "\nConsole pages at {skills} skills ({REQUESTS} sequential requests each, target p99 ≤ {TARGET_P99_MS} ms)"
    );
    println!(
        "{:<28} {:>9} {:>9} {:>9}  target",
        "page", "p50 ms", "p99 ms", "max ms"
    );
    let cookie = format!("xmemo_session={session}");
    let mut missed = 0;
    for (name, path) in &pages {
        let url = format!("{}{path}", srv.base_url);
        let mut times = Vec::with_capacity(REQUESTS);
        for i in 0..(WARMUP + REQUESTS) {
            let start = Instant::now();
            let resp = http.get(&url).header("cookie", &cookie).send().await?;
            let status = resp.status();
            let body = resp.bytes().await?;
            let took = start.elapsed();
            if status != reqwest::StatusCode::OK {
                bail!("{path}: HTTP {status}: {}", load::snippet(&body));
            }
            if i >= WARMUP {
                times.push(took.as_micros() as u64);
            }
        }
        let l = Latency::from_micros(times);
        let p99 = l.p99_us as f64 / 1000.0;
        let ok = p99 <= TARGET_P99_MS;
        if !ok {
            missed += 1;
        }
        println!(
            "{:<28} {:>9.2} {:>9.2} {:>9.2}  {}",
            name,
            l.p50_us as f64 / 1000.0,
            p99,
            l.max_us as f64 / 1000.0,
            if ok { "ok" } else { "MISSED" }
        );
    }
    println!(
        "{} of {} pages within the target",
        pages.len() - missed,
        pages.len()
    );
    Ok(())
}
