//! The Memory Console's handlers over real HTTP (docs/console.md): a signed-out visitor gets
//! the sign-in page, every state-changing form is refused without the session's form token or
//! from another origin, a viewer gets no write buttons and the server refuses their POSTs
//! anyway, skill Markdown renders sanitised under a strict CSP, and the pages show what the
//! service knows (review banner, badges, API key last use). The browser flows themselves are
//! in tests/console (headless Chromium).

mod common;

use common::TestServer;
use common::browser::Browser;
use serde_json::json;

fn admin_password(s: &TestServer) -> String {
    std::fs::read_to_string(s.data_dir.join("admin.password"))
        .expect("admin.password")
        .trim()
        .to_string()
}

async fn signed_in_admin(s: &TestServer) -> Browser {
    let mut b = Browser::new(&s.url);
    let page = b.sign_in("admin", &admin_password(s), "/console").await;
    assert_eq!(page.status, 303, "{}", page.body);
    assert_eq!(page.location(), "/console");
    b
}

/// A signed-in browser for a new account `handle` with a key (returned too).
async fn person(s: &TestServer, handle: &str) -> (Browser, String) {
    let key = s.account(handle, &["memory:read", "memory:write"]).await;
    let who = s.service.operator_for(handle).await.unwrap();
    s.service
        .set_password(&who, &who.account, "a long enough password")
        .await
        .unwrap();
    let mut b = Browser::new(&s.url);
    assert_eq!(
        b.sign_in(handle, "a long enough password", "/console")
            .await
            .status,
        303
    );
    (b, key)
}

/// The form token a console page carries (every page has the sign-out form).
async fn token(b: &mut Browser) -> String {
    b.get("/console/skills")
        .await
        .field("csrf")
        .expect("a form token on the page")
}

async fn status_of(s: &TestServer, key: &str, slug: &str, ws: &str) -> String {
    let r = s
        .get(
            &format!("/api/v1/skills/{slug}/revisions?workspace={ws}"),
            key,
        )
        .await;
    r.expect_ok()["revisions"][0]["status"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn signed_out_visitors_get_the_sign_in_page_and_come_back() {
    let s = TestServer::start().await;
    let mut b = Browser::new(&s.url);
    for path in [
        "/console/skills",
        "/console/skills/personal/x",
        "/console/skills/personal/x/edit",
        "/console/skills/personal/x/diff?to=r",
        "/console/skills/personal/x/export",
        "/console/skill?ws=personal&slug=x",
        "/console/skills/new",
        "/console/skill/diff?ws=personal&slug=x",
        "/console/memories",
        "/console/keys",
        "/console/grants",
        "/console/members",
        "/console/account",
        "/console/account/export",
        "/console/connect",
        "/console/import",
    ] {
        let page = b.get(path).await;
        assert_eq!(page.status, 303, "{path}");
        let to = page.location();
        assert!(to.starts_with("/login?next="), "{path} → {to}");
        assert_eq!(
            to,
            format!("/login?next={}", common::browser::urlencode(path)),
            "the way back is kept"
        );
    }
    // A signed-out POST changes nothing and leads to the sign-in page.
    let page = b
        .post_form("/console/keys/create", &[("name", "sneaky"), ("csrf", "x")])
        .await;
    assert_eq!(page.status, 303);
    assert!(page.location().starts_with("/login"));
    let keys = s.get("/api/v1/keys", &s.admin_key).await;
    assert!(!keys.body.to_string().contains("sneaky"));

    // Signing in with that `next` lands on the page asked for.
    let form = b.get("/login?next=%2Fconsole%2Fkeys").await;
    let csrf = form.field("csrf").unwrap();
    let page = b
        .post_form(
            "/login",
            &[
                ("handle", "admin"),
                ("password", &admin_password(&s)),
                ("next", "/console/keys"),
                ("csrf", &csrf),
            ],
        )
        .await;
    assert_eq!(page.location(), "/console/keys");
    assert_eq!(b.get("/console/keys").await.status, 200);
}

#[tokio::test]
async fn forms_without_the_token_or_from_elsewhere_are_refused() {
    let s = TestServer::start().await;
    s.save(&s.admin_key, common::skill("deploy", "Ship it."))
        .await
        .expect_ok();
    let revision = s
        .get(
            "/api/v1/skills/deploy/revisions?workspace=personal",
            &s.admin_key,
        )
        .await
        .expect_ok()["revisions"][0]["revision_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut b = signed_in_admin(&s).await;
    let csrf = token(&mut b).await;
    let fields = |csrf: &str| {
        vec![
            ("ws", "personal".to_string()),
            ("slug", "deploy".to_string()),
            ("revision_id", revision.clone()),
            ("action", "publish".to_string()),
            ("csrf", csrf.to_string()),
        ]
    };
    async fn send(b: &mut Browser, fields: &[(&str, String)]) -> common::browser::Page {
        let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        b.post_form("/console/skill/lifecycle", &pairs).await
    }

    let missing = send(&mut b, &fields("")).await;
    assert_eq!(missing.status, 403);
    assert_eq!(missing.error_code().as_deref(), Some("PERMISSION_DENIED"));
    let wrong = send(&mut b, &fields("not-the-token")).await;
    assert_eq!(wrong.status, 403);

    let mut other = Browser::new(&s.url);
    other.cookies = b.cookies.clone();
    other.origin = Some("http://evil.example".into());
    assert_eq!(send(&mut other, &fields(&csrf)).await.status, 403);
    other.origin = None;
    other
        .extra
        .push(("sec-fetch-site".into(), "cross-site".into()));
    assert_eq!(send(&mut other, &fields(&csrf)).await.status, 403);
    assert_eq!(
        status_of(&s, &s.admin_key, "deploy", "personal").await,
        "draft"
    );

    // Another session's token does not fit this one.
    let mut second = signed_in_admin(&s).await;
    let theirs = token(&mut second).await;
    assert_ne!(theirs, csrf);
    assert_eq!(send(&mut b, &fields(&theirs)).await.status, 403);
    assert_eq!(
        status_of(&s, &s.admin_key, "deploy", "personal").await,
        "draft"
    );

    // The real form goes through.
    let ok = send(&mut b, &fields(&csrf)).await;
    assert_eq!(ok.status, 303, "{}", ok.body);
    assert!(
        ok.location().contains("notice=published"),
        "{}",
        ok.location()
    );
    assert_eq!(
        status_of(&s, &s.admin_key, "deploy", "personal").await,
        "published"
    );
}

#[tokio::test]
async fn a_viewer_sees_no_write_buttons_and_is_refused_anyway() {
    let s = TestServer::start().await;
    s.post("/api/v1/workspaces", &s.admin_key, json!({"handle": "ops"}))
        .await
        .expect_ok();
    let (mut viewer, viewer_key) = person(&s, "carol").await;
    s.join("ops", &s.admin_key, "carol", &viewer_key, "viewer")
        .await;
    let mut body = common::skill("runbook", "Page the **owner**.");
    body["workspace"] = json!("ops");
    body["intent"] = json!("publish");
    s.save(&s.admin_key, body).await.expect_ok();
    let revision = s
        .get(
            "/api/v1/skills/runbook/revisions?workspace=ops",
            &s.admin_key,
        )
        .await
        .expect_ok()["revisions"][0]["revision_id"]
        .as_str()
        .unwrap()
        .to_string();

    let page = viewer.get("/console/skills/ops/runbook").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("<strong>owner</strong>"));
    let writes = [
        "/console/skills/ops/runbook/lifecycle",
        "/console/skills/ops/runbook/archive",
        "/console/skills/ops/runbook/edit",
    ];
    for write in writes {
        assert!(!page.body.contains(write), "a viewer sees no {write}");
    }
    // The admin (the team's owner) does see them.
    let mut admin = signed_in_admin(&s).await;
    let owner_page = admin.get("/console/skills/ops/runbook").await;
    for write in writes {
        assert!(owner_page.body.contains(write), "the owner sees {write}");
    }

    let csrf = token(&mut viewer).await;
    let refused = viewer
        .post_form(
            "/console/skill/lifecycle",
            &[
                ("ws", "ops"),
                ("slug", "runbook"),
                ("revision_id", &revision),
                ("action", "approve"),
                ("csrf", &csrf),
            ],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.error_code().as_deref(), Some("PERMISSION_DENIED"));
    let archive = viewer
        .post_form(
            "/console/skill/archive",
            &[
                ("ws", "ops"),
                ("slug", "runbook"),
                ("archived", "1"),
                ("csrf", &csrf),
            ],
        )
        .await;
    assert_eq!(archive.status, 403);
    // The skill's own addresses refuse the viewer the same way.
    let refused = viewer
        .post_form(
            "/console/skills/ops/runbook/lifecycle",
            &[
                ("revision_id", &revision),
                ("action", "approve"),
                ("csrf", &csrf),
            ],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let archive = viewer
        .post_form(
            "/console/skills/ops/runbook/archive",
            &[("archived", "1"), ("csrf", &csrf)],
        )
        .await;
    assert_eq!(archive.status, 403);
    assert_eq!(
        status_of(&s, &s.admin_key, "runbook", "ops").await,
        "proposed",
        "the viewer's approve changed nothing"
    );
}

#[tokio::test]
async fn skill_markdown_is_sanitised_under_a_strict_policy() {
    let s = TestServer::start().await;
    let hostile = "# Title\n\n<script>alert(1)</script>\n\n[x](javascript:alert(2))\n\n\
                   <img src=x onerror=\"alert(3)\">\n\n<div onclick=\"alert(4)\" style=\"x\">raw</div>\n\n\
                   <iframe src=\"https://evil.example\"></iframe>\n";
    let mut body = common::skill("hostile", hostile);
    body["intent"] = json!("publish");
    s.save(&s.admin_key, body).await.expect_ok();
    let mut b = signed_in_admin(&s).await;
    let page = b.get("/console/skills/personal/hostile").await;
    assert_eq!(page.status, 200);
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!(page.headers["x-frame-options"], "DENY");
    let article = page
        .body
        .split("data-testid=\"rendered\">")
        .nth(1)
        .and_then(|rest| rest.split("</article>").next())
        .expect("the rendered body");
    let lower = article.to_ascii_lowercase();
    for bad in [
        "<script",
        "javascript:",
        "onerror",
        "onclick",
        "<iframe",
        "style=",
    ] {
        assert!(!lower.contains(bad), "{bad} in {article}");
    }
    assert!(article.contains("<h1>Title</h1>"));
    assert!(article.contains("raw"));
    // The page's only script is the console's own file.
    assert_eq!(page.body.matches("<script").count(), 1);
    assert!(
        page.body
            .contains("<script src=\"/assets/console.js\" defer></script>")
    );

    // The live preview answers the same sanitised HTML, only to a form with the token.
    let csrf = token(&mut b).await;
    let preview = b
        .post_form("/console/preview", &[("body", hostile), ("csrf", &csrf)])
        .await;
    assert_eq!(preview.status, 200);
    assert!(!preview.body.to_ascii_lowercase().contains("<script"));
    assert!(!preview.body.contains("onerror"));
    let refused = b.post_form("/console/preview", &[("body", hostile)]).await;
    assert_eq!(refused.status, 403);
}

#[tokio::test]
async fn the_pages_show_reviews_badges_and_key_use() {
    let s = TestServer::start().await;
    s.post("/api/v1/workspaces", &s.admin_key, json!({"handle": "ops"}))
        .await
        .expect_ok();
    let bob_key = s.account("bob", &["memory:read", "memory:write"]).await;
    s.join("ops", &s.admin_key, "bob", &bob_key, "member").await;
    let mut body = common::skill("runbook", "Page the owner.");
    body["workspace"] = json!("ops");
    body["intent"] = json!("publish");
    let saved = s.save(&bob_key, body).await;
    assert!(
        saved.expect_ok().to_string().contains("\"proposed\""),
        "{}",
        saved.body
    );

    let mut admin = signed_in_admin(&s).await;
    let list = admin.get("/console/skills").await;
    assert_eq!(list.status, 200);
    assert!(
        list.body.contains("data-testid=\"review-banner\""),
        "{}",
        list.body
    );
    assert!(list.body.contains("proposed by bob"));
    assert!(list.body.contains("class=\"badge proposed\""));

    // Bob is a member: no banner for him (he cannot approve).
    let who = s.service.operator_for("bob").await.unwrap();
    s.service
        .set_password(&who, &who.account, "a long enough password")
        .await
        .unwrap();
    let mut bob = Browser::new(&s.url);
    bob.sign_in("bob", "a long enough password", "/console")
        .await;
    let his = bob.get("/console/skills").await;
    assert!(!his.body.contains("data-testid=\"review-banner\""));

    // The admin key was used by the calls above: the keys page says when.
    let keys = admin.get("/console/keys").await;
    assert_eq!(keys.status, 200);
    let row = keys
        .body
        .split("data-testid=\"last-used\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .unwrap_or_default();
    assert!(
        row.starts_with("20") && row.ends_with("UTC"),
        "last use: {row:?}"
    );
}

#[tokio::test]
async fn old_skill_addresses_redirect_and_unknown_pages_are_html() {
    let s = TestServer::start().await;
    let mut body = common::skill("deploy", "# Deploy\n\nSteps.");
    body["intent"] = json!("publish");
    let saved = s.save(&s.admin_key, body).await.expect_ok().clone();
    let rev = saved["data"]["revision_id"].as_str().unwrap().to_string();
    let mut b = signed_in_admin(&s).await;
    for (old, new) in [
        (
            format!("/console/skill?ws=personal&slug=deploy&rev={rev}&notice=saved"),
            format!("/console/skills/personal/deploy?rev={rev}&notice=saved"),
        ),
        // Without a workspace the slug's own is found.
        (
            "/console/skill?slug=deploy".to_string(),
            "/console/skills/personal/deploy".to_string(),
        ),
        (
            "/console/skill/edit?ws=personal&slug=deploy".to_string(),
            "/console/skills/personal/deploy/edit".to_string(),
        ),
        (
            format!("/console/skill/diff?ws=personal&slug=deploy&to={rev}"),
            format!("/console/skills/personal/deploy/diff?to={rev}"),
        ),
        (
            format!("/console/skill/export?ws=personal&slug=deploy&rev={rev}"),
            format!("/console/skills/personal/deploy/export?rev={rev}"),
        ),
    ] {
        let page = b.get(&old).await;
        assert_eq!(page.status, 308, "{old}: {}", page.body);
        assert_eq!(page.location(), new, "{old}");
        let moved = b.get(&new).await;
        assert_eq!(moved.status, 200, "{new}");
    }
    // A slug nobody has: the console's own error page, not a redirect to nowhere.
    let none = b.get("/console/skill?slug=nothing-here").await;
    assert_eq!(none.status, 404);
    assert_eq!(none.error_code().as_deref(), Some("NOT_FOUND"));

    for unknown in [
        "/console/nope",
        "/console/skills/personal/deploy/nope",
        "/console/skills/a/b/c/d",
    ] {
        let page = b.get(unknown).await;
        assert_eq!(page.status, 404, "{unknown}");
        let kind = page.headers["content-type"].to_str().unwrap();
        assert!(kind.starts_with("text/html"), "{unknown}: {kind}");
        assert!(page.body.contains("Page not found"), "{unknown}");
        assert_eq!(page.error_code().as_deref(), Some("NOT_FOUND"));
    }
    // The API keeps answering JSON for what it does not know.
    let api = b.get("/api/v1/nope").await;
    assert_eq!(api.status, 404);
    assert!(
        api.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
}

#[tokio::test]
async fn a_skill_page_shows_only_its_own_proposals() {
    let s = TestServer::start().await;
    for team in ["alpha", "beta"] {
        s.post(
            "/api/v1/workspaces",
            &s.admin_key,
            json!({"handle": team, "name": team}),
        )
        .await
        .expect_ok();
    }
    // A member (not a manager) proposes in both teams, under one slug.
    let bob = s.account("bob", &["memory:read", "memory:write"]).await;
    for team in ["alpha", "beta"] {
        s.join(team, &s.admin_key, "bob", &bob, "member").await;
        let mut body = common::skill("runbook", &format!("# {team}\n\nSteps for {team}."));
        body["intent"] = json!("publish");
        body["workspace"] = json!(team);
        let saved = s.save(&bob, body).await.expect_ok().clone();
        assert_eq!(saved["data"]["status"], "proposed");
    }
    let mut admin = signed_in_admin(&s).await;
    let alpha = admin.get("/console/skills/alpha/runbook").await;
    assert_eq!(alpha.status, 200);
    assert!(
        alpha.body.contains("/console/skills/alpha/runbook?rev="),
        "its own proposal is in the banner"
    );
    assert!(
        !alpha.body.contains("/console/skills/beta/runbook"),
        "another team's proposal for the same slug is not"
    );
}

/// #24: an import that needed repairs shows them before anything else; a ZIP of several
/// skill folders shows one row per folder and the counts; a clean import goes to its page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_imports_show_their_warnings_and_each_skill_of_a_batch() {
    use std::io::Write;
    let s = TestServer::start().await;
    let mut b = signed_in_admin(&s).await;
    let form = b.get("/console/import").await;
    assert_eq!(form.status, 200);
    let csrf = form.field("csrf").expect("form token");

    let page = b
        .post_multipart(
            "/console/import",
            &[
                ("csrf", None, csrf.as_bytes()),
                (
                    "file",
                    Some("SKILL.md"),
                    b"# Pi-hole Skill\n\nControl your Pi-hole DNS ad blocker.\n",
                ),
                ("slug", None, b"pihole"),
                ("intent", None, b"draft"),
            ],
        )
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Import result"), "{}", page.body);
    assert!(
        page.body.contains("taken from the first heading"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("data-outcome=\"created\""),
        "{}",
        page.body
    );

    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, bytes) in [
        (
            "skills/a/weather/SKILL.md",
            &b"---\nname: weather\ndescription: A.\n---\nA.\n"[..],
        ),
        (
            "skills/b/weather/SKILL.md",
            b"---\nname: weather\ndescription: B.\n---\n",
        ),
    ] {
        w.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        w.write_all(bytes).unwrap();
    }
    let zip = w.finish().unwrap().into_inner();
    let page = b
        .post_multipart(
            "/console/import",
            &[
                ("csrf", None, csrf.as_bytes()),
                ("file", Some("skills.zip"), &zip),
                ("intent", None, b"draft"),
            ],
        )
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("data-count=\"imported\">1<"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("data-count=\"refused\">1<"),
        "{}",
        page.body
    );
    assert!(page.body.contains("a-weather") && page.body.contains("b-weather"));
    assert!(
        page.body.contains("data-outcome=\"refused\""),
        "{}",
        page.body
    );

    // A clean one: straight to the skill's page, as before.
    let page = b
        .post_multipart(
            "/console/import",
            &[
                ("csrf", None, csrf.as_bytes()),
                (
                    "file",
                    Some("SKILL.md"),
                    b"---\nname: clean\ndescription: Clean.\n---\n\nBody.\n",
                ),
                ("intent", None, b"draft"),
            ],
        )
        .await;
    assert_eq!(page.status, 303, "{}", page.body);
    assert!(
        page.location()
            .starts_with("/console/skills/personal/clean")
    );
}

#[tokio::test]
async fn the_root_sends_a_browser_to_the_console_and_keeps_json_for_api_clients() {
    let s = TestServer::start().await;
    let mut browser = Browser::new(&s.url);
    // What Chromium sends when a person types the address.
    browser.extra.push((
        "accept".into(),
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8".into(),
    ));
    let page = browser.get("/").await;
    assert_eq!(page.status, 303, "{}", page.body);
    assert_eq!(page.location(), "/console");

    for accept in [Some("application/json"), Some("*/*"), None] {
        let mut req = s.http.get(format!("{}/", s.url));
        if let Some(a) = accept {
            req = req.header("accept", a);
        }
        let reply = common::Reply::from(req.send().await.unwrap()).await;
        reply.expect_error(404, "NOT_FOUND");
    }
}

#[tokio::test]
async fn the_favicon_is_an_icon() {
    let s = TestServer::start().await;
    let r = s
        .http
        .get(format!("{}/favicon.ico", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let kind = r.headers()["content-type"].to_str().unwrap().to_string();
    assert!(kind.starts_with("image/"), "{kind}");
    let bytes = r.bytes().await.unwrap();
    // An ICO directory of one image, and that image a PNG.
    assert_eq!(&bytes[..6], &[0, 0, 1, 0, 1, 0]);
    assert_eq!(&bytes[22..26], b"\x89PNG");
}

#[tokio::test]
async fn signing_in_without_a_way_back_lands_on_the_console() {
    let s = TestServer::start().await;
    // The form as a bare /login serves it, and forms whose `next` is empty or not local.
    let bare = Browser::new(&s.url).get("/login").await;
    assert_eq!(bare.field("next").as_deref(), Some("/console"));
    for next in ["/console", "", "https://elsewhere.example/"] {
        let mut b = Browser::new(&s.url);
        let csrf = b.get("/login").await.field("csrf").unwrap();
        let page = b
            .post_form(
                "/login",
                &[
                    ("handle", "admin"),
                    ("password", &admin_password(&s)),
                    ("next", next),
                    ("csrf", &csrf),
                ],
            )
            .await;
        assert_eq!(page.status, 303, "{next:?}: {}", page.body);
        assert_eq!(page.location(), "/console", "{next:?}");
        // A bare /login while signed in still says who is signed in, linking the console.
        let me = b.get("/login").await;
        assert_eq!(me.status, 200);
        assert!(me.body.contains("href=\"/console\""), "{}", me.body);
    }
}

#[tokio::test]
async fn the_sole_owner_is_told_why_they_cannot_leave_instead_of_a_leave_button() {
    let s = TestServer::start().await;
    s.post("/api/v1/workspaces", &s.admin_key, json!({"handle": "ops"}))
        .await
        .expect_ok();
    let mut admin = signed_in_admin(&s).await;
    let page = admin.get("/console/members?ws=ops").await;
    assert_eq!(page.status, 200);
    assert!(
        !page.body.contains("value=\"leave\""),
        "no Leave team for the only owner"
    );
    assert!(page.body.contains("data-testid=\"sole-owner\""));
    assert!(page.body.contains("only owner"));

    // With a second owner, leaving is possible, and offered.
    let (mut bob, bob_key) = person(&s, "bob").await;
    s.join("ops", &s.admin_key, "bob", &bob_key, "owner").await;
    let page = admin.get("/console/members?ws=ops").await;
    assert!(page.body.contains("value=\"leave\""), "{}", page.body);
    assert!(!page.body.contains("data-testid=\"sole-owner\""));
    // The other owner is offered it too.
    let bobs = bob.get("/console/members?ws=ops").await;
    assert!(bobs.body.contains("value=\"leave\""));
}

#[tokio::test]
async fn a_first_revision_diff_shows_the_whole_proposal_as_added() {
    let s = TestServer::start().await;
    s.save(
        &s.admin_key,
        common::skill("fresh", "Ring the on-call owner first."),
    )
    .await
    .expect_ok();
    let mut admin = signed_in_admin(&s).await;
    let page = admin.get("/console/skills/personal/fresh/diff").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        !page.body.contains("same content"),
        "a first revision is not compared with itself"
    );
    let body = page
        .body
        .split("data-testid=\"body-diff\">")
        .nth(1)
        .and_then(|r| r.split("</pre>").next())
        .unwrap_or_default();
    assert_eq!(
        body, "<ins>Ring the on-call owner first.</ins>",
        "{}",
        page.body
    );
    assert!(page.body.contains("+5 / −0 words"), "{}", page.body);
    assert!(page.body.contains("first revision"));

    // Comparing a revision with itself on purpose still says they are the same.
    let rev = s
        .get(
            "/api/v1/skills/fresh/revisions?workspace=personal",
            &s.admin_key,
        )
        .await;
    let id = rev.expect_ok()["revisions"][0]["revision_id"]
        .as_str()
        .unwrap()
        .to_string();
    let same = admin
        .get(&format!(
            "/console/skills/personal/fresh/diff?from={id}&to={id}"
        ))
        .await;
    assert!(same.body.contains("same content"));
}

#[tokio::test]
async fn the_help_page_gives_each_role_its_failure_and_links_the_pages_that_fix_it() {
    let s = TestServer::start().await;
    let mut signed_out = Browser::new(&s.url);
    let page = signed_out.get("/console/help").await;
    assert_eq!(page.status, 303);
    assert_eq!(page.location(), "/login?next=%2Fconsole%2Fhelp");

    let mut admin = signed_in_admin(&s).await;
    // Every console page's navigation leads to it.
    let skills = admin.get("/console/skills").await;
    assert!(skills.body.contains("<a href=\"/console/help\""));
    let help = admin.get("/console/help").await;
    assert_eq!(help.status, 200);
    assert!(help.body.contains("aria-current=\"page\">Help</a>"));
    // Each role of the product page: its failure, and the console pages of its fix.
    let roles: [(&str, &str, &[&str]); 4] = [
        (
            "chatgpt",
            "tools do not appear",
            &["/console/connect#client-chatgpt", "/console/grants"],
        ),
        (
            "developer",
            "recalls come back empty",
            &[
                "/console/connect",
                "/console/keys",
                "/console/grants",
                "/console/memories",
            ],
        ),
        (
            "pilot-owner",
            "a member cannot connect",
            &[
                "/console/members",
                "/console/grants",
                "/console/connect",
                "/console/keys",
            ],
        ),
        (
            "operator",
            "recalls are split across agent instances",
            &[
                "/console/connect#client-headless",
                "/console/keys",
                "/console/memories",
            ],
        ),
    ];
    for (role, failure, links) in roles {
        let section = help
            .body
            .split(&format!("data-testid=\"help-{role}\""))
            .nth(1)
            .and_then(|r| r.split("</section>").next())
            .unwrap_or_else(|| panic!("no section for {role}"));
        assert!(section.contains(failure), "{role}: {section}");
        for link in links {
            assert!(
                section.contains(&format!("href=\"{link}\"")),
                "{role} lacks {link}"
            );
            // The page linked to exists.
            let path = link.split('#').next().unwrap();
            assert_eq!(admin.get(path).await.status, 200, "{link}");
        }
    }
    // The served server's address is http: the ChatGPT section says hosted clients cannot
    // reach it.
    assert!(help.body.contains("is not https"));
}
