use super::*;

fn task(id: &str, title: &str, focus: &str) -> PlanTask {
    PlanTask {
        id: id.into(),
        title: title.into(),
        files: Vec::new(),
        focus: focus.into(),
    }
}

fn slice(groups: &[usize]) -> Slice {
    Slice {
        groups: groups.to_vec(),
        files: Vec::new(),
        text: String::new(),
        tokens: 0,
        lines: Vec::new(),
    }
}

#[test]
fn slices_are_named_by_the_planners_areas_with_their_parts() {
    let plan = Plan {
        version: 1,
        tasks: vec![
            task("t1", "Config and SSL", "check TLS defaults"),
            task("t2", "Auth", "check TLS defaults"),
            task("t3", "Docs", "typos"),
            task("t4", "CLI", "flags"),
            task("t5", "Tests", "coverage"),
        ],
    };
    let slices = [slice(&[0]), slice(&[0, 1]), slice(&[2, 3, 4, 1])];
    let names = slice_names(&plan, &slices);
    assert_eq!(names[0].0, "t1.1");
    assert_eq!(names[0].1, "Config and SSL (part 1 of 2)");
    assert_eq!(names[0].2, "check TLS defaults");
    assert_eq!(names[1].0, "t1.2,t2.1");
    assert_eq!(
        names[1].1,
        "Config and SSL (part 2 of 2); Auth (part 1 of 2)"
    );
    // Areas with the same checks are named together.
    assert!(
        names[1]
            .2
            .contains("- Config and SSL (part 2 of 2); Auth (part 1 of 2): check TLS defaults"),
        "{}",
        names[1].2
    );
    assert_eq!(names[2].0, "t3,t4,t5,t2.2");
    assert_eq!(names[2].1, "Docs; CLI; Tests and 1 more area");
    assert!(
        names
            .iter()
            .all(|(id, title, _)| !id.contains('+') && !title.contains('+'))
    );
}
