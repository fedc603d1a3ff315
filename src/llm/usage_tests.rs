//! Adding up the usage of several calls.

use super::Usage;

#[test]
fn usage_of_several_calls_adds_every_count_and_keeps_an_estimate() {
    let mut total = Usage::default();
    total += &Usage {
        prompt_tokens: 100,
        completion_tokens: 7,
        cached_prompt_tokens: 40,
        cache_write_tokens: 3,
        estimated: false,
    };
    total += &Usage {
        prompt_tokens: 20,
        completion_tokens: 1,
        cached_prompt_tokens: 0,
        cache_write_tokens: 2,
        estimated: true,
    };
    total += &Usage::default();
    assert_eq!(
        total,
        Usage {
            prompt_tokens: 120,
            completion_tokens: 8,
            cached_prompt_tokens: 40,
            cache_write_tokens: 5,
            estimated: true,
        }
    );
}
