"""The app's shared UI: state, controls, loading/caching and renderers, a module per concern.

Pages stay thin: widgets -> ``ctxcore`` -> the renderers here, always called as ``ctxui.X`` (tests patch names on
this package). Imports inside point one way, bottom to top: text, theme, settings, linkparams, pagesmode; state;
loading, budget, controls, inputs, scenario; the renderers (summary, tables, charts, prompt, download); diagnosis,
sent, compare, steps, lessons; casestore (SQLite, no Streamlit), cases, banner, firstpaint, links. Chunk text is shown as text, never as HTML or live markdown (see ctxui.text).
"""

from __future__ import annotations

from .text import (  # noqa: F401
    esc, md_escape, one_line, safe_filename, WORD_JOINER, _AUTOLINK, _MD_PUNCT,
)
from .theme import (  # noqa: F401
    FATE_BADGES, fate_badges, FATE_COLORS, fate_style, favicon, KIND_COLORS, page_style, _fate_style,
)
from .settings import (  # noqa: F401
    config_from_controls, controls_from_config, DEFAULT_CONTROLS, DEFAULTS, OFF_VALUES, ORDER_HELP, PAGE_DEFAULTS,
    SELECT_HELP, SLIDER_RANGES,
)
from .linkparams import (  # noqa: F401
    LINK_BY_KEY, LINK_PAGE_KEYS, LINK_PARAMS, LinkParam, MAX_TOKENS,
)
from .pagesmode import (  # noqa: F401
    _leave_pages_directory_mode,
)
from .state import (  # noqa: F401
    apply_config, apply_controls, BINDINGS, bound, current_config, init_state, link_page_param, link_params,
    reset_defaults, set_page_params, STORE, store, sync_url, _link_base, _page_hash,
)
from .loading import (  # noqa: F401
    build_trace, content_key, LARGE_INPUT, load_bytes, load_named_sample, ROOT, safe_build, SAMPLE_DIR,
    sample_path, sample_paths, _build, _load, _load_trace,
)
from .budget import (  # noqa: F401
    count_block_tokens, store_budget,
)
from .controls import (  # noqa: F401
    MODELS, query_input, sidebar_controls, tokenizer_select, window_controls, _tokenizer_label, _tokenizer_options,
)
from .inputs import (  # noqa: F401
    about_panel, ensure_loaded, input_section, loaded_input, trace_picker, use_sample, _sample_title, _use,
)
from .scenario import (  # noqa: F401
    has_failure, scenario_header, scenario_info, scenario_story, settings_buttons, settings_source, _scenario,
    _settings_mode, _text,
)
from .summary import (  # noqa: F401
    metrics, side_metrics, warnings_list,
)
from .tables import (  # noqa: F401
    blank_missing, detail_view, FATES_COLUMNS, fates_frame, fates_table, MAX_PICKER, readable_table,
    REASON_WIDTH, row_height_for, wrap_lines, _select_row,
)
from .charts import (  # noqa: F401
    budget_waterfall, MAP_SCALES, map_right, map_scale_label, map_scale_note, position_chart, prompt_map, sent_map,
    span_timeline, token_bars, _block_text,
)
from .prompt import (  # noqa: F401
    block_pieces, block_text, prompt_view, token_boundaries, _block_name, _pieces,
)
from .download import (  # noqa: F401
    download_files, downloads,
)
from .diagnosis import (  # noqa: F401
    apply_fix, before_after, claims_frame, decisive_text, diagnose_cached, explain_frame, failure_state, failure_trace,
    fix_text, logged_of, logged_prompt_text, marks, model_limit, open_in_failure_state, pipeline_rules, replay_frame,
    run_diagnosis, fix_controls, fix_label, open_in_policy, passage_texts,
    SEARCH_LIMIT, sent_passages_frame, SEVERITY,
)
from .sent import (  # noqa: F401
    sent_changes, sent_frame, sent_side, sent_summary, sent_tokens, sent_view, spans_frame, spans_panel,
    view_mode, VIEWS,
)
from .compare import (  # noqa: F401
    changes_table, fate_changes, moved_passages, moved_table, preset_config, PRESET_HELP, PRESET_LABELS,
    preset_options, prompt_diff, read_side_links, render_side, sent_comparison, settings_changes, shared_right,
    side_choice, side_trace, SIDE_DEFAULTS, totals_frame,
)
from .steps import (  # noqa: F401
    build_step, COMPRESSION, encode_step_value, IDENTICAL, kept_count, N_STEPS, read_step_link, SPACED, Step,
    STEPS,
)
from .lessons import (  # noqa: F401
    change_metrics, fate_moves, show_assembly, show_budget, show_compression, show_exact, show_labels, show_merge, show_near,
    show_ordering, show_selection, show_stale, show_threshold, show_tokens, show_trace, STEP_VIEWS,
)
from .cases import (  # noqa: F401
    answer_key, case_fields, case_link, cases_frame, current_input, date_bounds, diagnosed_kind, import_upload,
    open_case, open_case_page, propose_tag, remember_input, save_case_box, tag_label,
)
from .banner import (  # noqa: F401
    input_banner,
)
from . import casestore  # noqa: F401
from .open_from import open_from  # noqa: F401
from .firstpaint import (  # noqa: F401
    gap, headline_first, headline_run, INPUT_GAP, OPEN_FROM_GAP, paint_headline_first, QUERY_GAP,
)
from .links import (  # noqa: F401
    link_text, link_warning, read_link, share_box, start_run,
)
__all__ = [
    "esc", "md_escape", "one_line", "safe_filename", "WORD_JOINER", "_AUTOLINK", "_MD_PUNCT", "FATE_BADGES",
    "fate_badges", "FATE_COLORS", "fate_style", "favicon", "KIND_COLORS", "_fate_style", "config_from_controls",
    "controls_from_config", "DEFAULT_CONTROLS", "DEFAULTS", "OFF_VALUES", "ORDER_HELP", "PAGE_DEFAULTS",
    "SELECT_HELP", "SLIDER_RANGES", "LINK_BY_KEY", "LINK_PAGE_KEYS", "LINK_PARAMS", "LinkParam", "MAX_TOKENS",
    "_leave_pages_directory_mode", "apply_config", "apply_controls", "BINDINGS", "bound", "current_config",
    "init_state", "link_page_param", "link_params", "reset_defaults", "set_page_params", "STORE", "store",
    "sync_url", "_link_base", "_page_hash", "build_trace", "content_key", "LARGE_INPUT", "load_bytes",
    "load_named_sample", "ROOT", "safe_build", "SAMPLE_DIR", "sample_path", "sample_paths", "_build", "_load",
    "_load_trace", "count_block_tokens", "store_budget", "MODELS", "query_input", "sidebar_controls",
    "tokenizer_select", "window_controls", "_tokenizer_label", "_tokenizer_options", "ensure_loaded",
    "about_panel", "input_section", "loaded_input", "trace_picker", "use_sample", "_sample_title", "_use", "scenario_header",
    "scenario_info", "scenario_story", "settings_buttons", "_scenario", "_settings_mode", "_text", "metrics",
    "side_metrics", "warnings_list", "detail_view", "FATES_COLUMNS", "fates_frame", "fates_table", "MAX_PICKER",
    "_select_row", "budget_waterfall", "position_chart", "prompt_map", "token_bars", "_block_text", "block_pieces",
    "block_text", "prompt_view", "token_boundaries", "_block_name", "_pieces", "download_files", "downloads",
    "changes_table", "fate_changes", "moved_passages", "moved_table", "preset_config", "PRESET_HELP",
    "PRESET_LABELS", "preset_options", "prompt_diff", "read_side_links", "settings_changes", "SIDE_DEFAULTS",
    "totals_frame", "apply_fix", "before_after", "claims_frame", "decisive_text", "diagnose_cached", "explain_frame", "failure_state",
    "failure_trace", "fix_controls", "fix_label", "fix_text", "open_in_policy", "passage_texts", "logged_of", "logged_prompt_text", "marks", "model_limit", "open_in_failure_state", "pipeline_rules", "replay_frame",
    "run_diagnosis", "SEARCH_LIMIT", "sent_passages_frame", "SEVERITY",
    "build_step", "COMPRESSION", "encode_step_value", "IDENTICAL", "kept_count", "N_STEPS", "read_step_link",
    "SPACED", "Step", "STEPS", "change_metrics", "fate_moves", "show_assembly", "show_budget", "show_compression", "show_exact",
    "show_labels", "show_merge", "show_near", "show_ordering", "show_selection", "show_stale", "show_threshold",
    "show_tokens", "show_trace", "STEP_VIEWS", "link_text", "link_warning", "read_link", "share_box", "start_run",
    "has_failure", "settings_source", "blank_missing", "readable_table", "REASON_WIDTH", "row_height_for",
    "wrap_lines", "MAP_SCALES", "map_right", "map_scale_label", "map_scale_note", "sent_map", "span_timeline", "sent_changes",
    "sent_frame", "sent_side", "sent_summary", "sent_tokens", "sent_view", "spans_frame", "spans_panel",
    "view_mode", "VIEWS", "render_side", "sent_comparison", "shared_right", "side_choice", "side_trace",
    "answer_key", "input_banner", "diagnosed_kind", "propose_tag", "tag_label", "case_fields", "case_link", "cases_frame", "current_input", "date_bounds",
    "import_upload", "open_case", "open_case_page", "remember_input", "save_case_box", "casestore",
    "paint_headline_first", "open_from", "gap", "headline_first", "headline_run", "INPUT_GAP", "OPEN_FROM_GAP",
    "QUERY_GAP", "page_style",
]
