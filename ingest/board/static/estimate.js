// An estimate of the experiment answer: a number with its 95% interval (openapi_models.Estimate).

import { pickEach } from "./fields.js";

/** The fields of an estimate (Estimate) the board reads: bars, whiskers and "[low, high]". */
export const ESTIMATE_FIELDS = ["value", "ci_low", "ci_high"];

// A list of estimates of the answer, read through ESTIMATE_FIELDS.
export const estimates = (list, where) => pickEach(list, ESTIMATE_FIELDS, where);
