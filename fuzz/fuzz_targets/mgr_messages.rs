#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| msgr_fuzz_targets::mgr_messages(data));
