//! The DevTools protocol client of the browser tests: headless Chromium started in a process
//! group of its own with a temporary profile, one page attached over the browser's WebSocket,
//! commands sent as `{id, method, params, sessionId}` and their answers awaited (events in
//! between skipped), every wait bounded. Dropping the [`Browser`] kills the group, then removes
//! the profile.

use std::io::ErrorKind;
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

const CHROMIUM: &str = "/usr/bin/chromium";

/// Headless Chromium and one page of it, attached over CDP. Dropping it kills the browser's
/// whole process group, then removes its profile directory.
pub(super) struct Browser {
    child: Child,
    ws: WebSocket<TcpStream>,
    next_id: u64,
    session: String,
    /// Where the browser saves downloads.
    pub(super) downloads: PathBuf,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group this test started (the child is its leader).
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// `f` until it gives `Some`, every 100 ms, for at most `limit`; `what` names it on timeout.
pub(super) fn wait_until<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out after {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Browser {
    /// Starts Chromium and opens a page; `None` (the test skipped) when it is not installed.
    pub(super) fn launch() -> Option<Browser> {
        if !Path::new(CHROMIUM).exists() {
            crate::skip::skip(&format!(
                "{CHROMIUM} is not installed (scripts/test.sh installs it)"
            ));
            return None;
        }
        let profile = tempfile::tempdir().unwrap();
        let child = Command::new(CHROMIUM)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--remote-debugging-port=0",
                "--window-size=1280,900",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        // Until the socket is up the guard cannot exist: kill the child by hand on failure.
        let ws = match Self::connect(profile.path()) {
            Ok(ws) => ws,
            Err(e) => {
                // SAFETY: as in Drop.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                panic!("cannot reach Chromium's DevTools: {e}");
            }
        };
        let downloads = profile.path().join("downloads");
        std::fs::create_dir_all(&downloads).unwrap();
        let mut b = Browser {
            child,
            ws,
            next_id: 1,
            session: String::new(),
            downloads,
            _profile: profile,
        };
        b.attach();
        Some(b)
    }

    /// The browser's WebSocket, from the port file Chromium writes in its profile.
    fn connect(profile: &Path) -> Result<WebSocket<TcpStream>, String> {
        let file = profile.join("DevToolsActivePort");
        let start = Instant::now();
        let text = loop {
            match std::fs::read_to_string(&file) {
                Ok(t) if t.lines().count() >= 2 => break t,
                _ if start.elapsed() > Duration::from_secs(30) => {
                    return Err(format!("no {} after 30 s", file.display()))
                }
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        let mut lines = text.lines();
        let port = lines.next().unwrap_or_default().trim();
        let path = lines.next().unwrap_or_default().trim();
        let stream = TcpStream::connect(format!("127.0.0.1:{port}")).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        let (ws, _) = tungstenite::client(format!("ws://127.0.0.1:{port}{path}"), stream)
            .map_err(|e| e.to_string())?;
        // Short reads from here on, so every wait checks its own deadline.
        ws.get_ref()
            .set_read_timeout(Some(Duration::from_millis(200)))
            .map_err(|e| e.to_string())?;
        Ok(ws)
    }

    /// A page of its own, 1280×900, attached in flat mode (its commands carry its session id);
    /// downloads saved without asking.
    fn attach(&mut self) {
        let target = self.call(None, "Target.createTarget", json!({"url": "about:blank"}));
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        self.session = attached["sessionId"].as_str().unwrap().to_string();
        let path = self.downloads.display().to_string();
        self.call(
            None,
            "Browser.setDownloadBehavior",
            json!({"behavior": "allow", "downloadPath": path}),
        );
        self.send(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
        );
    }

    /// One CDP command (to the browser, or to the page's `session`); its result.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        self.ws.send(Message::text(message.to_string())).unwrap();
        let start = Instant::now();
        loop {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{method}: no answer in 60 s"
            );
            let text = match self.ws.read() {
                Ok(Message::Text(t)) => t,
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e))
                    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    continue
                }
                Err(e) => panic!("{method}: {e}"),
            };
            let answer: Value = serde_json::from_str(text.as_str()).unwrap();
            if answer["id"] == id {
                assert!(answer["error"].is_null(), "{method}: {}", answer["error"]);
                return answer["result"].clone();
            }
        }
    }

    /// A command to the page.
    fn send(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.call(Some(&session), method, params)
    }

    /// The value of a JavaScript expression in the page (a promise is awaited).
    pub(super) fn eval(&mut self, expression: &str) -> Value {
        let r = self.send(
            "Runtime.evaluate",
            json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
        );
        assert!(
            r["exceptionDetails"].is_null(),
            "{expression}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Waits until `expression` is truthy; its value.
    pub(super) fn wait(&mut self, expression: &str, limit: Duration) -> Value {
        wait_until(expression, limit, || {
            let v = self.eval(expression);
            let truthy = !(v.is_null() || v == json!(false) || v == json!(0) || v == json!(""));
            truthy.then_some(v)
        })
    }

    /// Loads `url` and waits for the page's script to have run.
    pub(super) fn open(&mut self, url: &str) {
        self.send("Page.navigate", json!({ "url": url }));
        self.wait(
            // The form's choice of test comes from GET /api/kinds.
            "document.readyState === 'complete' && !!document.querySelector('#run-form [name=kind] option')",
            Duration::from_secs(20),
        );
    }

    /// The whole page as a PNG in target/ui-screenshots/NAME.png; its path is printed.
    pub(super) fn screenshot(&mut self, name: &str) -> PathBuf {
        let metrics = self.send("Page.getLayoutMetrics", json!({}));
        let size = &metrics["cssContentSize"];
        let width = size["width"].as_f64().unwrap_or(1280.0).max(1280.0);
        let height = size["height"]
            .as_f64()
            .unwrap_or(900.0)
            .clamp(900.0, 6000.0);
        let shot = self.send(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true,
                   "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}}),
        );
        let dir = screenshots_dir();
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, base64(shot["data"].as_str().unwrap())).unwrap();
        println!("screenshot: {}", path.display());
        path
    }

    /// The page's JavaScript heap in use after a full collection, bytes.
    pub(super) fn heap_after_gc(&mut self) -> f64 {
        self.send("HeapProfiler.collectGarbage", json!({}));
        self.send("Runtime.getHeapUsage", json!({}))["usedSize"]
            .as_f64()
            .unwrap()
    }

    /// The page's live DOM nodes (Performance.getMetrics' `Nodes`).
    pub(super) fn dom_nodes(&mut self) -> f64 {
        self.send("Performance.enable", json!({}));
        let metrics = self.send("Performance.getMetrics", json!({}));
        metrics["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "Nodes")
            .and_then(|m| m["value"].as_f64())
            .unwrap()
    }
}

/// `target/ui-screenshots`, beside the tests' `tmp` directory in the target directory.
fn screenshots_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("ui-screenshots")
}

/// Standard base64 (CDP's screenshots) into bytes.
fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let clean: Vec<u8> = text.bytes().filter(|&c| c != b'=' && c != b'\n').collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &c)| n | (u32::from(value(c)) << (18 - 6 * i)));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}
