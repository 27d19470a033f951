"""The app's shared UI: state, controls, loading/caching and renderers, a module per concern.

Pages stay thin: widgets -> ``ctxcore`` -> the renderers here, always called as ``ctxui.X`` (tests patch names
on this package). Imports inside point one way: text, theme, settings, linkparams and pagesmode at the bottom;
state above them; then loading, controls, inputs and scenario; then the renderers; links and compare on top.
Chunk text is shown as text, never as HTML or live markdown (see :mod:`ctxui.text`).
"""

from __future__ import annotations

from .text import (  # noqa: F401
    _AUTOLINK, _MD_PUNCT, esc, md_escape, one_line, safe_filename, WORD_JOINER
)
from .theme import (  # noqa: F401
    _fate_style, FATE_BADGES, fate_badges, FATE_COLORS, fate_style, favicon, KIND_COLORS
)
from .settings import (  # noqa: F401
    config_from_controls, controls_from_config, DEFAULT_CONTROLS, DEFAULTS, OFF_VALUES, ORDER_HELP, PAGE_DEFAULTS,
    SELECT_HELP, SLIDER_RANGES
)
from .linkparams import (  # noqa: F401
    LINK_BY_KEY, LINK_PAGE_KEYS, LINK_PARAMS, LinkParam, MAX_TOKENS
)
from .pagesmode import (  # noqa: F401
    _leave_pages_directory_mode
)
from .state import (  # noqa: F401
    _link_base, _page_hash, apply_config, apply_controls, BINDINGS, bound, current_config, init_state,
    link_page_param, link_params, reset_defaults, set_page_params, STORE, store, sync_url
)
from .loading import (  # noqa: F401
    _build, _load, _load_trace, build_trace, content_key, LARGE_INPUT, load_bytes, load_named_sample, ROOT,
    safe_build, SAMPLE_DIR, sample_path, sample_paths
)
from .controls import (  # noqa: F401
    _tokenizer_label, _tokenizer_options, MODELS, query_input, sidebar_controls, tokenizer_select, window_controls
)
from .inputs import (  # noqa: F401
    _sample_title, _use, ensure_loaded, input_section, loaded_input, trace_picker, use_sample
)
from .scenario import (  # noqa: F401
    _scenario, _settings_mode, _text, scenario_header, scenario_info, scenario_story, settings_buttons
)
from .summary import (  # noqa: F401
    metrics, side_metrics, warnings_list
)
from .tables import (  # noqa: F401
    _select_row, detail_view, FATES_COLUMNS, fates_frame, fates_table, MAX_PICKER
)
from .charts import (  # noqa: F401
    _block_text, budget_waterfall, position_chart, prompt_map, token_bars
)
from .prompt import (  # noqa: F401
    _block_name, _pieces, block_pieces, block_text, prompt_view, token_boundaries
)
from .download import (  # noqa: F401
    download_files, downloads
)
from .compare import (  # noqa: F401
    changes_table, fate_changes, moved_passages, moved_table, preset_config, PRESET_HELP, PRESET_LABELS,
    preset_options, prompt_diff, settings_changes, totals_frame
)
from .links import (  # noqa: F401
    link_text, link_warning, read_link, share_box, start_run
)

__all__ = [
    "_AUTOLINK", "_MD_PUNCT", "esc", "md_escape", "one_line", "safe_filename", "WORD_JOINER", "_fate_style",
    "FATE_BADGES", "fate_badges", "FATE_COLORS", "fate_style", "favicon", "KIND_COLORS", "config_from_controls",
    "controls_from_config", "DEFAULT_CONTROLS", "DEFAULTS", "OFF_VALUES", "ORDER_HELP", "PAGE_DEFAULTS",
    "SELECT_HELP", "SLIDER_RANGES", "LINK_BY_KEY", "LINK_PAGE_KEYS", "LINK_PARAMS", "LinkParam", "MAX_TOKENS",
    "_leave_pages_directory_mode", "_link_base", "_page_hash", "apply_config", "apply_controls", "BINDINGS",
    "bound", "current_config", "init_state", "link_page_param", "link_params", "reset_defaults", "set_page_params",
    "STORE", "store", "sync_url", "_build", "_load", "_load_trace", "build_trace", "content_key", "LARGE_INPUT",
    "load_bytes", "load_named_sample", "ROOT", "safe_build", "SAMPLE_DIR", "sample_path", "sample_paths",
    "_tokenizer_label", "_tokenizer_options", "MODELS", "query_input", "sidebar_controls", "tokenizer_select",
    "window_controls", "_sample_title", "_use", "ensure_loaded", "input_section", "loaded_input", "trace_picker",
    "use_sample", "_scenario", "_settings_mode", "_text", "scenario_header", "scenario_info", "scenario_story",
    "settings_buttons", "metrics", "side_metrics", "warnings_list", "_select_row", "detail_view", "FATES_COLUMNS",
    "fates_frame", "fates_table", "MAX_PICKER", "_block_text", "budget_waterfall", "position_chart", "prompt_map",
    "token_bars", "_block_name", "_pieces", "block_pieces", "block_text", "prompt_view", "token_boundaries",
    "download_files", "downloads", "changes_table", "fate_changes", "moved_passages", "moved_table",
    "preset_config", "PRESET_HELP", "PRESET_LABELS", "preset_options", "prompt_diff", "settings_changes",
    "totals_frame", "link_text", "link_warning", "read_link", "share_box", "start_run",
]
