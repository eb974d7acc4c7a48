// The selectors' choices from the board's index (GET /v1/board/index): what is chosen when
// nothing is yet (the first experiment, Google, the autocomplete study of `defaultStudy`, the
// newest personalization study) and the options of each <select>, as [value, label] pairs. Pure.

// The autocomplete study the board opens on: the newest with two rounds that fetched something
// (churn and nmi compare rounds), else the newest with one, else the newest. Not merely the
// newest: one failed crawl would replace the panels with empty ones.
export function defaultStudy(studies) {
  const withData = (n) => studies.find((st) => st.rounds_with_data >= n);
  return (withData(2) ?? withData(1) ?? studies[0])?.study ?? "";
}

// current: {experiment, engine, ac, ps} as in fragment.js. Returns the same fields, chosen,
// and `options`: {experiment, engine, ac, ps}.
export function choose(index, current) {
  let { experiment, engine, ac, ps } = current;

  const exps = index.experiments;
  if (!experiment && exps.length) experiment = exps[0].experiment_id;
  const expOptions = exps.map((e) => [e.experiment_id, e.registered ? `${e.experiment_id} (${e.status})` : e.experiment_id]);
  if (experiment && !exps.some((e) => e.experiment_id === experiment)) expOptions.unshift([experiment, `${experiment} (no data yet)`]);

  const chosen = exps.find((e) => e.experiment_id === experiment);
  const engines = chosen && chosen.engines.length ? chosen.engines : ["google"];
  if (!engines.includes(engine)) engine = engines.includes("google") ? "google" : engines[0];

  const studies = index.autocomplete_studies;
  if (ac === null) ac = defaultStudy(studies);
  const acOptions = [["", "every crawl"], ...studies.map((st) => [st.study, `${st.study}* (${st.engines.join(", ")})`])];
  if (ac && !studies.some((st) => st.study === ac)) acOptions.push([ac, `${ac}*`]);

  const pss = index.personalization_studies;
  if (!ps && pss.length) ps = pss[0].study_id;
  const psOptions = pss.map((st) => [st.study_id, st.study_id]);
  if (ps && !pss.some((st) => st.study_id === ps)) psOptions.unshift([ps, `${ps} (no data yet)`]);

  const none = [["", "none yet"]];
  return {
    experiment,
    engine,
    ac,
    ps,
    options: {
      experiment: expOptions.length ? expOptions : none,
      engine: engines.map((e) => [e, e]),
      ac: acOptions,
      ps: psOptions.length ? psOptions : none,
    },
  };
}
