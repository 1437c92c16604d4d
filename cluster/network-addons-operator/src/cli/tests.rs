use super::*;
use clap::CommandFactory;

fn parse(args: &[&str]) -> std::result::Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("network-addons-operator").chain(args.iter().copied()))
}

#[test]
fn the_command_line_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn run_serves_on_port_8080_of_every_address_by_default() {
    let Ok(Cli {
        command: Command::Run {
            metrics_bind_address,
        },
    }) = parse(&["run"])
    else {
        panic!("run parses");
    };
    assert_eq!(metrics_bind_address.to_string(), "0.0.0.0:8080");
}

#[test]
fn a_flag_takes_its_value_after_a_space_or_an_equals_sign_and_the_last_one_wins() {
    for args in [
        &["run", "--metrics-bind-address", "127.0.0.1:9"][..],
        &["run", "--metrics-bind-address=127.0.0.1:9"],
        &[
            "run",
            "--metrics-bind-address",
            ":1",
            "--metrics-bind-address",
            "127.0.0.1:9",
        ],
    ] {
        let Ok(Cli {
            command: Command::Run {
                metrics_bind_address,
            },
        }) = parse(args)
        else {
            panic!("{args:?} parses");
        };
        assert_eq!(metrics_bind_address.to_string(), "127.0.0.1:9", "{args:?}");
    }
}

#[test]
fn render_reads_stdin_when_told_dash() {
    let Ok(Cli {
        command: Command::Render {
            file, mac_prefix, ..
        },
    }) = parse(&["render", "-f", "-", "--mac-prefix", "4a:BE"])
    else {
        panic!("render parses");
    };
    assert_eq!(file, Some(PathBuf::from("-")));
    assert_eq!(mac_prefix, Some([0x4a, 0xbe]));
}

#[test]
fn malformed_values_unknown_flags_and_a_missing_out_are_refused() {
    for args in [
        &["render", "--mac-prefix", "4a"][..],
        &["render", "--mac-prefix", "4a:bee"],
        &["run", "--metrics-bind-address", "localhost"],
        &["crd", "--out", "x"],
        &["deploy"],
        &["serve"],
    ] {
        assert!(parse(args).is_err(), "{args:?} accepted");
    }
}
