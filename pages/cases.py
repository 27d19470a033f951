"""Saved cases: every case saved on this server, filtered by tag, text and date; open, export, delete, import."""

import streamlit as st

import ctxui

st.title("Saved cases", anchor=False)
st.caption(f"Cases are stored on this server in {ctxui.casestore.db_path()} (set CTXCORE_DATA_DIR to move it). "
           "A case holds its input, its settings and the view it was saved with; its link opens that view for "
           "anyone using this server.")
ctxui.init_state()
ss = st.session_state
for problem in ss.pop("case.problems", None) or ():
    st.error(ctxui.md_escape(problem), icon=":material/error:")

tag_col, text_col, date_col = st.columns([1, 2, 1], vertical_alignment="bottom")
tag = tag_col.selectbox("Root cause", ("",) + ctxui.casestore.TAGS, key="cases.tag",
                        format_func=lambda t: ctxui.tag_label(t) if t else "any")
text = text_col.text_input("Search title, note, file name and question", key="cases.text")
days = date_col.date_input("Saved between", value=(), key="cases.dates", format="YYYY-MM-DD")
since, until = ctxui.date_bounds(days if isinstance(days, tuple) else (days,))
read_only = ctxui.casestore.read_only_reason()
if read_only:
    st.info(ctxui.md_escape(f"Saving is unavailable: {read_only}. The cases are shown as they are."),
            icon=":material/lock:")
try:
    cases = ctxui.casestore.list_cases(tag=tag or None, text=text, since=since, until=until)
except (ctxui.casestore.CaseError, OSError, ctxui.casestore.sqlite3.Error) as err:
    st.error(ctxui.md_escape(f"The saved cases could not be read: {ctxui.one_line(err)}"), icon=":material/error:")
    cases = []
ss["cases.shown"] = [c.id for c in cases]  # for tests

if not cases:
    st.info("No saved case matches." if (tag or text or since) else
            "No case saved yet: use “Save this case” on the Debugger or Diagnose page.", icon=":material/inbox:")
else:
    st.caption(f"{len(cases)} case{'s' if len(cases) != 1 else ''} · click a row to act on it")
    picked = ctxui.readable_table(ctxui.cases_frame(cases), key="cases.table", reason="note",
                                  on_select="rerun", selection_mode="single-row", column_config={
                                      "saved": st.column_config.DatetimeColumn("saved", format="YYYY-MM-DD HH:mm"),
                                      "problem": st.column_config.TextColumn("problem", width="large"),
                                      "title": st.column_config.TextColumn("title", width="medium")})
    rows = (picked.selection.rows if picked is not None else []) or []
    case = cases[rows[0]] if rows and rows[0] < len(cases) else None
    if case is not None:
        with st.container(border=True):
            st.text(f"{case.title} · {case.id}")
            if case.problem:
                st.warning(ctxui.md_escape(f"This case cannot be opened or exported: {case.problem}. "
                                           "Delete it, or fix the store."), icon=":material/warning:")
            else:
                st.code(ctxui.case_link(case.id, case.page), language=None, wrap_lines=True)
            with st.container(horizontal=True, gap="small"):
                if not case.problem:
                    if st.button("Open", key="cases.open", icon=":material/open_in_new:", type="primary"):
                        ctxui.open_case_page(case.id)  # switches to the page it was saved from
                    st.download_button("Export as JSON", lambda: ctxui.casestore.export_case(case.id),
                                       file_name=ctxui.safe_filename(case.title or case.id, ".case.json"),
                                       mime="application/json", key="cases.export", on_click="ignore",
                                       icon=":material/download:")
                if not read_only and st.button("Delete", key="cases.delete", icon=":material/delete:"):
                    ss["cases.confirm"] = case.id  # a second, named click deletes: the store is shared
            if ss.get("cases.confirm") == case.id and not read_only:
                st.warning(ctxui.md_escape(f"Delete “{case.title}” ({case.id}) for everyone on this server? "
                                           "This cannot be undone."), icon=":material/delete:")
                with st.container(horizontal=True, gap="small"):
                    if st.button(ctxui.md_escape(f"Yes, delete “{case.title or case.id}”"), key="cases.delete_yes",
                                 type="primary"):
                        ss.pop("cases.confirm", None)
                        try:
                            ctxui.casestore.delete_case(case.id)
                        except (ctxui.casestore.CaseError, OSError, ctxui.casestore.sqlite3.Error) as err:
                            ss["case.problems"] = [f"{case.id} was not deleted: {ctxui.one_line(err)}"]
                        st.rerun()
                    if st.button("Keep it", key="cases.delete_no"):
                        ss.pop("cases.confirm", None)
                        st.rerun()

if read_only:
    st.stop()
st.subheader("Import a case", anchor=False)
st.caption("A case exported from another server (one JSON file with its input). It gets a new id here when its "
           "own is taken.")
upload = st.file_uploader("Exported case (.case.json)", type=["json"], key="cases.import")
if upload is not None and upload.file_id != ss.get("cases.imported_file"):
    ss["cases.imported_file"] = upload.file_id
    new_id = ctxui.import_upload(upload)
    if new_id:
        ss["cases.imported"] = new_id
        st.rerun()
if ss.get("cases.imported"):
    st.success(ctxui.md_escape(f"Imported as case {ss['cases.imported']}."), icon=":material/check:")
