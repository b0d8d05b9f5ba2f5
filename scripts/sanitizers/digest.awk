# The digest scripts/sanitize.sh prints after the reports in full, so that the end of a long log (all some CI
# pages keep) still says what raced and where: each report's headline, each access, location and thread line, and
# under each its top frame and the first three frames of the package's own code (Sources/, Tests/).
/^WARNING: |^ERROR: / { print; next }
# TSan indents its access, location and thread lines by two spaces; ASan starts them at the margin.
/^  [A-Z].*(by|at) / || /^  Location / || /^(READ|WRITE) of size|^(freed|previously allocated) by|^0x[0-9a-f]+ is located/ {
    print; frames = 0; own = 0; next
}
/^    #[0-9]+ / {
    frames++
    mine = ($0 ~ /\/(Sources|Tests)\//) && ($0 !~ /\/checkouts\//)
    if (frames == 1 || (mine && own < 3)) {
        line = $0
        sub(/ \(.*\+0x[0-9a-f]+\).*$/, "", line)
        print line
        if (mine) own++
    }
    next
}
/^SUMMARY: / { print }
