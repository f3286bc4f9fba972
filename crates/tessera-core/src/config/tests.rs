use super::*;

fn load_err(src: &str, overrides: &[&str]) -> Error {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    load(&ConfigSource::Text(src.to_string()), &o).unwrap_err()
}

fn preset_err(overrides: &[&str]) -> String {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    load(&ConfigSource::Preset("sandy_bridge".into()), &o).unwrap_err().to_string()
}

#[test]
fn every_preset_resolves_and_round_trips_through_toml() {
    for p in presets() {
        let spec = load(&ConfigSource::Preset(p.name.into()), &[]).unwrap();
        let again = load(&ConfigSource::Text(spec.to_toml()), &[]).unwrap();
        assert_eq!(spec, again, "preset {}", p.name);
        assert_eq!(spec.to_toml(), again.to_toml());
    }
}

#[test]
fn unknown_key_names_its_path_and_the_allowed_keys() {
    let e = preset_err(&["mmu.tlb.l2_tlb.entires=1024"]);
    assert!(e.contains("mmu.tlb.l2_tlb"), "{e}");
    assert!(e.contains("entires") && e.contains("entries"), "{e}");
}

#[test]
fn unknown_top_level_section_is_an_error() {
    let e = preset_err(&["tlbs.x=1"]);
    assert!(e.contains("tlbs"), "{e}");
}

#[test]
fn ways_must_divide_entries() {
    let e = preset_err(&["mmu.tlb.l2_tlb.ways=3"]);
    assert!(e.contains("mmu.tlb.l2_tlb.ways") && e.contains("not divisible"), "{e}");
}

#[test]
fn sets_must_be_a_power_of_two() {
    let e = preset_err(&["mmu.tlb.l2_tlb.entries=384"]);
    assert!(e.contains("mmu.tlb.l2_tlb.entries") && e.contains("power of two"), "{e}");
}

#[test]
fn cache_geometry_is_checked() {
    let e = preset_err(&["cache.l2.size=\"96KiB\""]);
    assert!(e.contains("cache.l2.size") && e.contains("power of two"), "{e}");
}

#[test]
fn cache_line_numbers_must_fit_the_tags() {
    // 512 GiB / 64 B = 2^33 line numbers: more than a 32-bit cache tag holds.
    let e = preset_err(&["physmem.capacity=\"512GiB\""]);
    assert!(e.contains("cache.l1d.line") && e.contains("physmem.capacity") && e.contains("2^32"), "{e}");
    // 128-byte lines halve the line numbers: 2^32 is still one too many (u32::MAX marks empty).
    let e = preset_err(&["physmem.capacity=\"512GiB\"", "cache.l1d.line=\"128B\"", "cache.l2.line=\"128B\"", "cache.llc.line=\"128B\""]);
    assert!(e.contains("cache.l1d.line"), "{e}");
    let ok: Vec<String> = ["physmem.capacity=\"256GiB\"", "cache.l1d.line=\"128B\"", "cache.l2.line=\"128B\"", "cache.llc.line=\"128B\""]
        .iter()
        .map(|s| s.to_string())
        .collect();
    load(&ConfigSource::Preset("sandy_bridge".into()), &ok).unwrap();
}

#[test]
fn unknown_mechanism_lists_allowed_names() {
    let e = preset_err(&["mmu.tlb.l2_tlb.replacement=lur"]);
    assert!(e.contains("mmu.tlb.l2_tlb.replacement.kind"), "{e}");
    assert!(e.contains("lru") && e.contains("random"), "{e}");
}

#[test]
fn unknown_mechanism_parameter_is_an_error() {
    let e = preset_err(&["physmem.page_size.maxx=\"1g\""]);
    assert!(e.contains("physmem.page_size") && e.contains("maxx"), "{e}");
}

#[test]
fn policy_producing_unheld_page_size_is_a_contradiction() {
    let e = preset_err(&["physmem.page_size.kind=thp", "physmem.page_size.max=\"1g\""]);
    assert!(e.contains("physmem.page_size") && e.contains("1g"), "{e}");
}

#[test]
fn thp_is_one_override() {
    let spec = load(&ConfigSource::Preset("sandy_bridge".into()), &["physmem.page_size=thp".into()]).unwrap();
    assert_eq!(spec.physmem.page_size.kind, "thp");
    assert_eq!(spec.physmem.page_size.params.get("max").and_then(|v| v.as_str()), Some("2m"));
}

#[test]
fn entry_level_must_exist() {
    let e = load_err(
        "inherit = \"tlb_only\"\n[walker]\nentry_level = \"l2\"\n",
        &[],
    )
    .to_string();
    assert!(e.contains("walker.entry_level") && e.contains("dram"), "{e}");
}

#[test]
fn inherit_merges_over_a_preset() {
    let spec = load(
        &ConfigSource::Text("inherit = \"sandy_bridge\"\nname = \"mine\"\n[mmu.tlb.l2_tlb]\nentries = 1024\n".into()),
        &[],
    )
    .unwrap();
    assert_eq!(spec.name, "mine");
    assert_eq!(spec.mmu.tlb["l2_tlb"].entries, 1024);
    assert_eq!(spec.mmu.tlb["l2_tlb"].latency, 7);
}

#[test]
fn unknown_preset_lists_presets() {
    let e = load(&ConfigSource::Preset("nope".into()), &[]).unwrap_err().to_string();
    assert!(e.contains("sandy_bridge") && e.contains("gtsm_ptlsim"), "{e}");
}

#[test]
fn bad_byte_size_is_explained() {
    let e = preset_err(&["physmem.capacity=\"16 parsecs\""]);
    assert!(e.contains("physmem.capacity") && e.contains("16 parsecs"), "{e}");
}

#[test]
fn level_gap_is_an_error() {
    let e = preset_err(&["mmu.tlb.l2_tlb.level=3"]);
    assert!(e.contains("mmu.tlb") && e.contains("gaps"), "{e}");
}

#[test]
fn psc_names_are_checked() {
    let e = preset_err(&["mmu.psc.pte.entries=4", "mmu.psc.pte.ways=4"]);
    assert!(e.contains("mmu.psc.pte") && e.contains("pde"), "{e}");
}

#[test]
fn malformed_override_is_an_error() {
    let e = preset_err(&["mmu.tlb.l2_tlb.entries"]);
    assert!(e.contains("dotted.key=value"), "{e}");
}


#[test]
fn type_errors_are_plain_english() {
    let e = preset_err(&["mmu.tlb.l2_tlb.latency=-1"]);
    assert!(e.contains("mmu.tlb.l2_tlb.latency") && e.contains("must be a whole number from 0 to 4294967295, not -1"), "{e}");
    assert!(!e.contains("u32"), "{e}");
    let e = preset_err(&["mmu.tlb.l2_tlb.latency=1.5"]);
    assert!(e.contains("must be a whole number from 0 to 4294967295, not 1.5"), "{e}");
    let e = preset_err(&["timing.enabled=3"]);
    assert!(e.contains("must be true or false, not 3"), "{e}");
}

#[test]
fn sizes_print_for_people() {
    assert_eq!(spec::ByteSize(64 << 10).human(), "64 KiB");
    assert_eq!(spec::ByteSize(3 << 29).human(), "1.5 GiB");
    assert_eq!(spec::ByteSize(1 << 40).human(), "1 TiB");
    assert_eq!(spec::ByteSize(100).human(), "100 B");
    assert_eq!(spec::ByteSize((1 << 30) + 4096).human(), "1 GiB");
    assert_eq!(spec::ByteSize((1 << 30) + 4096).human_exact(), "1 GiB (1,073,745,920 bytes)");
    assert_eq!(spec::ByteSize(1 << 30).human_exact(), "1 GiB");
    assert_eq!(spec::ByteSize::parse("2PiB"), Some(2 << 50));
}

#[test]
fn an_inheriting_machine_does_not_keep_the_presets_description() {
    let spec = load(&ConfigSource::Text("inherit = \"tlb_only\"\n".into()), &[]).unwrap();
    assert_eq!(spec.description, "based on preset tlb_only");
    let spec = load(&ConfigSource::Text("inherit = \"tlb_only\"\ndescription = \"mine\"\n".into()), &[]).unwrap();
    assert_eq!(spec.description, "mine");
    let dir = std::env::temp_dir().join(format!("tessera-inherit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("big_stlb.toml");
    std::fs::write(&f, "inherit = \"sandy_bridge\"\n[mmu.tlb.l2_tlb]\nentries = 1024\n").unwrap();
    let spec = load(&ConfigSource::File(f.clone()), &[]).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(spec.name, "big_stlb");
    assert_eq!(spec.description, "based on preset sandy_bridge");
}

#[test]
fn an_override_inside_an_unknown_structure_names_the_known_ones() {
    let e = preset_err(&["mmu.tlb.l2tlb.entries=1024"]);
    assert!(e.contains("`mmu.tlb.l2tlb`") && e.contains("no TLB structure `l2tlb`"), "{e}");
    assert!(e.contains("l1_dtlb_4k") && e.contains("l2_tlb") && e.contains("did you mean `l2_tlb`?"), "{e}");
    assert!(!e.contains("level"), "the old error about a missing `level` is back: {e}");
    let e = preset_err(&["mmu.psc.pmd.entries=64"]);
    assert!(e.contains("no paging-structure cache `pmd`") && e.contains("pde, pdpte, pml4e"), "{e}");
    let e = load_err("inherit = \"tlb_only\"", &["cache.l2.size=1MiB"]).to_string();
    assert!(e.contains("no cache level `l2`") && e.contains("known: none"), "{e}");
}

#[test]
fn a_new_structure_is_added_whole_and_existing_ones_take_sub_keys() {
    let add = "mmu.tlb.l3_tlb={ level = 3, side = \"data\", page_sizes = [\"4k\"], entries = 2048, ways = 8 }";
    let spec = load(&ConfigSource::Preset("sandy_bridge".into()), &[add.to_string(), "mmu.tlb.l3_tlb.latency=20".to_string()]).unwrap();
    let l3 = &spec.mmu.tlb["l3_tlb"];
    assert_eq!((l3.level, l3.entries, l3.latency), (3, 2048, 20));
    let spec = load(&ConfigSource::Preset("sandy_bridge".into()), &["mmu.psc.pde.entries=64".to_string()]).unwrap();
    assert_eq!(spec.mmu.psc["pde"].entries, 64);
}

#[test]
fn tlb_organisation_defaults_to_set_assoc_and_resolves_its_parameters() {
    let spec = load(&ConfigSource::Preset("sandy_bridge".into()), &[]).unwrap();
    assert!(spec.mmu.tlb.values().all(|t| t.organisation.kind == "set_assoc"));
    let o = vec!["mmu.tlb.l2_tlb.organisation=\"coalescing\"".to_string()];
    let spec = load(&ConfigSource::Preset("sandy_bridge".into()), &o).unwrap();
    let org = &spec.mmu.tlb["l2_tlb"].organisation;
    assert_eq!(org.kind, "coalescing");
    assert_eq!(org.params["group"].as_integer(), Some(8));
    assert_eq!(org.params["require_contiguity"].as_bool(), Some(true));
    assert_eq!(org.params["fill_from"].as_str(), Some("line"));
    let again = load(&ConfigSource::Text(spec.to_toml()), &[]).unwrap();
    assert_eq!(spec, again);
    let o = vec!["mmu.tlb.l2_tlb.organisation={ kind = \"coalescing\", group = 32, fill_from = \"group\" }".to_string()];
    let spec = load(&ConfigSource::Preset("sandy_bridge".into()), &o).unwrap();
    assert_eq!(spec.mmu.tlb["l2_tlb"].organisation.params["group"].as_integer(), Some(32));
}

#[test]
fn coalescing_group_must_be_a_power_of_two_from_1_to_64() {
    for g in ["0", "3", "24", "128"] {
        let e = preset_err(&[&format!("mmu.tlb.l2_tlb.organisation={{ kind = \"coalescing\", group = {g} }}")]);
        assert!(e.contains("mmu.tlb.l2_tlb.organisation.group") && e.contains("power of two from 1 to 64"), "{g}: {e}");
    }
}

/// `gt_blocks` needs GT-PDEs to decode: with any other table it is an error
/// naming the key, for a TLB structure and a shadow alike. Left out of the
/// written config when false.
#[test]
fn gt_blocks_needs_the_gt_pde_table() {
    let org = "{ kind = \"coalescing\", group = 32, gt_blocks = true }";
    let e = preset_err(&[&format!("mmu.tlb.l2_tlb.organisation={org}")]);
    assert!(e.contains("mmu.tlb.l2_tlb.organisation.gt_blocks") && e.contains("gt_pde") && e.contains("\"x86_radix\""), "{e}");
    let e = preset_err(&[&format!("mmu.shadow.s={{ entries = 64, ways = 4, organisation = {org} }}")]);
    assert!(e.contains("mmu.shadow.s.organisation.gt_blocks"), "{e}");
    let gt = |o: &str| {
        let o = vec!["pagetable.format.kind=\"gt_pde\"".to_string(), "physmem.page_size=\"gtsm\"".into(), o.to_string()];
        load(&ConfigSource::Preset("gtsm_ptlsim".into()), &o).unwrap()
    };
    let on = gt(&format!("mmu.tlb.l2_tlb.organisation={org}"));
    assert_eq!(on.mmu.tlb["l2_tlb"].organisation.params["gt_blocks"].as_bool(), Some(true));
    assert_eq!(on, load(&ConfigSource::Text(on.to_toml()), &[]).unwrap());
    let off = gt("mmu.tlb.l2_tlb.organisation={ kind = \"coalescing\", gt_blocks = false }");
    assert!(!off.to_toml().contains("gt_blocks"));
}

#[test]
fn coalescing_parameters_are_checked_strictly() {
    let e = preset_err(&["mmu.tlb.l2_tlb.organisation={ kind = \"coalescing\", fill_from = \"page\" }"]);
    assert!(e.contains("mmu.tlb.l2_tlb.organisation.fill_from") && e.contains("line") && e.contains("group"), "{e}");
    let e = preset_err(&["mmu.tlb.l2_tlb.organisation={ kind = \"coalescing\", groups = 8 }"]);
    assert!(e.contains("mmu.tlb.l2_tlb.organisation") && e.contains("groups"), "{e}");
    let e = preset_err(&["mmu.tlb.l2_tlb.organisation=\"coalesced\""]);
    assert!(e.contains("mmu.tlb.l2_tlb.organisation.kind") && e.contains("set_assoc") && e.contains("coalescing"), "{e}");
    let e = preset_err(&["mmu.tlb.l2_tlb.organisation={ kind = \"set_assoc\", group = 8 }"]);
    assert!(e.contains("mmu.tlb.l2_tlb.organisation") && e.contains("group"), "{e}");
}

#[test]
fn a_coalescing_structure_must_hold_4k_pages() {
    let e = preset_err(&["mmu.tlb.l1_dtlb_2m.organisation=\"coalescing\""]);
    assert!(e.contains("mmu.tlb.l1_dtlb_2m.organisation") && e.contains("4 KiB") && e.contains("page_sizes"), "{e}");
}

#[test]
fn victim_fill_needs_single_page_entries() {
    let e = preset_err(&["mmu.fill=\"victim\"", "mmu.tlb.l2_tlb.organisation=\"coalescing\""]);
    assert!(e.contains("`mmu.fill`") && e.contains("mmu.tlb.l2_tlb.organisation") && e.contains("all_levels"), "{e}");
    assert!(load(&ConfigSource::Preset("sandy_bridge".into()), &["mmu.fill=\"victim\"".to_string()]).is_ok());
}

/// Every structure is bounded before anything is allocated: a table too
/// large for the host is a config error naming the key and the range, never
/// an allocation failure that aborts the process.
#[test]
fn huge_structures_are_config_errors_naming_the_range() {
    let range = "must be a whole number from 1 to 16777216";
    for o in [
        "mmu.tlb.l2_tlb.entries=2147483648",
        "mmu.tlb.l2_tlb.entries=4294967296",
        "mmu.psc.pde.entries=2147483648",
        "mmu.shadow.big={ entries = 2147483648, ways = \"full\" }",
    ] {
        let e = preset_err(&[o, "mmu.tlb.l2_tlb.ways=\"full\""]);
        let key = o.split('=').next().unwrap().replace("mmu.shadow.big", "mmu.shadow.big.entries");
        assert!(e.contains(&format!("`{key}`")) && e.contains(range), "{o}: {e}");
    }
    let e = preset_err(&["cache.llc.size=\"128GiB\"", "cache.llc.ways=\"full\""]);
    assert!(e.contains("cache.llc.size") && e.contains("at most 67108864 lines (4 GiB of 64-byte lines)"), "{e}");
    let e = preset_err(&["mmu.tlb.l2_tlb.entries=8388608", "mmu.tlb.l2_tlb.organisation={ kind = \"coalescing\", group = 64, require_contiguity = false }"]);
    assert!(e.contains("mmu.tlb.l2_tlb.organisation.group") && e.contains("16777216"), "{e}");
    let e = preset_err(&["physmem.capacity=\"2TiB\"", "os.swap={ capacity = \"1GiB\" }"]);
    assert!(e.contains("physmem.capacity") && e.contains("at most 1 TiB"), "{e}");
    // The largest allowed structure resolves.
    load(&ConfigSource::Preset("tlb_only".into()), &["mmu.tlb.l2_tlb.entries=16777216".into(), "mmu.tlb.l2_tlb.ways=\"full\"".into()]).unwrap();
}

/// A negative, zero, huge or non-numeric count gets one message with the
/// real range, whatever the mistake.
#[test]
fn out_of_range_counts_share_one_message() {
    for v in ["-1", "0", "16777217", "\"many\"", "1.5", "true"] {
        let e = preset_err(&[&format!("mmu.tlb.l2_tlb.entries={v}")]);
        assert!(e.contains("`mmu.tlb.l2_tlb.entries`") && e.contains("must be a whole number from 1 to 16777216, not "), "{v}: {e}");
    }
    for v in ["-1", "0"] {
        let e = preset_err(&[&format!("mmu.tlb.l2_tlb.level={v}")]);
        assert!(e.contains("`mmu.tlb.l2_tlb.level`") && e.contains("must be a whole number from 1 to 4294967295"), "{v}: {e}");
        let e = preset_err(&[&format!("mmu.tlb.l2_tlb.ways={v}")]);
        assert!(e.contains("`mmu.tlb.l2_tlb.ways`") && e.contains("from 1 to the entries, or \"full\""), "{v}: {e}");
    }
}

/// The capacity's own range is checked before the cache levels whose tags depend on it.
#[test]
fn capacity_beyond_the_limit_names_the_capacity_range() {
    let e = preset_err(&["physmem.capacity=\"2PiB\""]);
    assert!(e.contains("`physmem.capacity`") && e.contains("from 2 MiB to 4 TiB, not 2 PiB"), "{e}");
    assert!(!e.contains("cache"), "{e}");
}

/// A machine file's TOML syntax error gives the line and column.
#[test]
fn invalid_toml_gives_line_and_column() {
    let e = load_err("name = \"x\"\n\n[physmem\ncapacity = 1\n", &[]).to_string();
    assert!(e.contains("invalid TOML at line 3, column 9"), "{e}");
    assert_eq!(line_column("ab\ncdé\nf", 7), (2, 4));
}

/// A machine file that cannot be read is a config error naming it (exit 2), not an I/O error.
#[test]
fn unreadable_machine_file_is_a_config_error() {
    let e = load(&ConfigSource::File("no/such/machine.toml".into()), &[]).unwrap_err();
    assert!(matches!(&e, Error::Config { path, .. } if path == "no/such/machine.toml"), "{e}");
    assert!(e.to_string().contains("no such machine file"), "{e}");
}

/// GTSM's combinations: GT-PDEs need their table, the buddy allocator and
/// no swap device, and never come with 2 MB PDEs.
#[test]
fn gtsm_contradictions_name_their_keys() {
    let gt = ["pagetable.format.kind=\"gt_pde\"", "physmem.page_size=\"gtsm\""];
    load(&ConfigSource::Preset("gtsm_ptlsim".into()), &gt.map(String::from)).unwrap();
    let e = preset_err(&["physmem.page_size=\"gtsm\""]);
    assert!(e.contains("pagetable.format") && e.contains("gt_pde"), "{e}");
    let e = preset_err(&["pagetable.format.kind=\"gt_pde\"", "physmem.page_size=\"thp\""]);
    assert!(e.contains("physmem.page_size") && e.contains("never both"), "{e}");
    let e = preset_err(&[gt[0], gt[1], "os.swap={ capacity = \"1GiB\" }", "os.eviction=\"lru\""]);
    assert!(e.contains("os.swap") && e.contains("page-out"), "{e}");
    let e = preset_err(&[gt[0], gt[1], "physmem.allocator=\"iceberg\""]);
    assert!(e.contains("physmem.allocator") && e.contains("buddy"), "{e}");
    let e = preset_err(&[gt[0], gt[1], "physmem.page_size.min_blocks=40"]);
    assert!(e.contains("physmem.page_size.min_blocks"), "{e}");
    let e = preset_err(&[gt[0], "pagetable.format.mode=\"gt_pde_8m\""]);
    assert!(e.contains("pagetable.format.mode") && e.contains("gt_pde_1m"), "{e}");
    let e = preset_err(&[gt[0], "pagetable.format.decode_cycles=5000"]);
    assert!(e.contains("pagetable.format.decode_cycles"), "{e}");
}

#[test]
fn timing_kind_is_checked_and_interval_configs_serialise_as_before() {
    let e = preset_err(&["timing.kind=\"oooo\""]);
    assert!(e.contains("timing.kind") && e.contains("interval") && e.contains("ooo"), "{e}");
    // An interval run writes neither the kind nor the ooo table, even from a
    // preset that sets the table.
    let spec = load(&ConfigSource::Preset("sandy_bridge".into()), &[]).unwrap();
    let text = spec.to_toml();
    assert!(!text.contains("ooo") && !text.contains("kind = \"interval\""), "{text}");
    // The ooo model writes both, with the preset's values.
    let ooo = load(&ConfigSource::Preset("sandy_bridge".into()), &["timing.kind=\"ooo\"".into()]).unwrap();
    assert_eq!((ooo.timing.ooo.window, ooo.timing.ooo.mshrs), (168, 10));
    // Setting the kind keeps the rest of [timing] (it is not a mechanism's kind).
    assert_eq!(ooo.timing.frequency_ghz, 3.2);
    let again = load(&ConfigSource::Text(ooo.to_toml()), &[]).unwrap();
    assert_eq!(ooo, again);
    assert!(ooo.to_toml().contains("[timing.ooo]"));
}

#[test]
fn ooo_parameters_are_validated() {
    let e = preset_err(&["timing.kind=\"ooo\"", "timing.ooo.window=2"]);
    assert!(e.contains("timing.ooo.window") && e.contains("dispatch_width"), "{e}");
    for key in ["window", "dispatch_width", "retire_width", "lsq", "mshrs", "walkers"] {
        let e = preset_err(&["timing.kind=\"ooo\"", &format!("timing.ooo.{key}=0")]);
        assert!(e.contains(&format!("timing.ooo.{key}")), "{e}");
    }
    let e = preset_err(&["timing.kind=\"ooo\"", "timing.ooo.dependency_fraction=1.5"]);
    assert!(e.contains("timing.ooo.dependency_fraction") && e.contains("0 to 1"), "{e}");
    let e = preset_err(&["timing.ooo.mshr=4"]);
    assert!(e.contains("timing.ooo") && e.contains("mshrs"), "{e}");
    // Checked under the interval model too: a typo there is still a typo.
    let e = preset_err(&["timing.ooo.walkers=0"]);
    assert!(e.contains("timing.ooo.walkers"), "{e}");
}
