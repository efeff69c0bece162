//! A fleet's runners are stopped together, each with a bound of its own: at the end of a
//! case none is reported hung for waiting out its poll delay behind the others.

mod common;

#[tokio::test(flavor = "multi_thread")]
async fn fifty_polling_runners_stop_together_and_none_is_called_hung() {
    let text = r#"
name = "fleet-stop"
[workload]
sandboxes = 50
turns_per_sec = 20
duration = "3s"
[[case]]
name = "local-poll"
clock = "virtual"
runner = "poll"
writer = "poll"
"#;
    let (summary, _out, _relay) = common::run("fleet-stop.toml", text, false, false).await;
    let r = &summary.results[0];
    assert_eq!(r.runner.stuck, 0, "no runner hung: {:?}", r.notices);
    assert!(r.gates.iter().all(|g| g.pass) && r.pass, "{:?}", r.gates);
}
