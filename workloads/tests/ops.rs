//! Ops print as docscript that parses back, and serialize with serde.

use docsim_engine::script::parse_line;
use docsim_workloads::{strategy, Op, Profile};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn every_op_is_one_valid_docscript_line(ops in strategy::ops(Profile::Nested, 60)) {
        for op in ops {
            let line = op.to_string();
            prop_assert!(!line.contains('\n'));
            let parsed = parse_line(&line, 1)
                .map_err(|e| TestCaseError::fail(format!("{line}: {e}")))?;
            prop_assert!(parsed.is_some());
            if let Op::Doc(command) = &op {
                prop_assert_eq!(parsed.as_ref(), Some(command));
            }
        }
    }

    #[test]
    fn ops_round_trip_through_serde(ops in strategy::ops(Profile::Cql, 30)) {
        for op in ops {
            let json = serde_json::to_string(&op).expect("serializes");
            let back: Op = serde_json::from_str(&json).expect("deserializes");
            prop_assert_eq!(back.to_string(), op.to_string());
        }
    }

    #[test]
    fn redis_and_ttl_ops_parse(
        ops in strategy::ops(Profile::Redis, 40), ttl in strategy::ops(Profile::TtlHeavy, 40),
    ) {
        for op in ops.into_iter().chain(ttl) {
            let line = op.to_string();
            prop_assert!(parse_line(&line, 1).is_ok(), "{}", line);
        }
    }
}
