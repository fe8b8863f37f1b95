/* The README's example: open a bundle, explain one query, print the first answer. */
#include <stdio.h>

#include "cent.h"

static CentBundle bundle;   /* zeroed statics: no allocator needed */
static CentScratch scratch;
static CentResult result;

int explain_one(const uint8_t *bytes, size_t len, const float *x, size_t columns) {
    CentStatus status = cent_bundle_open(&bundle, bytes, len);
    if (status != CENT_STATUS_OK) {
        printf("bundle refused: %s\n", cent_status_str(status));
        return 1;
    }
    CentOptions options = cent_options_default();
    options.answers = 1;
    options.immutable = 1u << 0; /* feature 0 (say, age) may not change */
    status = cent_explain(&bundle, x, columns, &options, &scratch, &result);
    if (status != CENT_STATUS_OK) {
        printf("query refused: %s\n", cent_status_str(status));
        return 1;
    }
    CentSummary summary;
    CentAnswer answer;
    float values[CENT_MAX_COLUMNS];
    cent_result_summary(&result, &summary);
    if (summary.answers == 0) {
        printf("no counterfactual (reason %d)\n", (int)summary.not_found);
        return 0;
    }
    cent_result_answer(&result, 0, &answer);
    cent_result_values(&result, 0, values, CENT_MAX_COLUMNS);
    printf("class %d at cost %.3f, %u features changed (mask %#x), first value %.3f\n",
           answer.class_id, answer.cost / (double)CENT_COST_SCALE,
           (unsigned)answer.features_changed, (unsigned)answer.changed, values[0]);
    return 0;
}
