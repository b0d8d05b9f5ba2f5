# The digest scripts/sanitize.sh prints after the reports in full, so that the end of a long log (all some CI
# pages keep) still says what raced and where: each report's headline, each access, location and thread line, and
# under each its top frame and the first three frames of the package's own code (paths under `root`, the checkout,
# outside its build directories). Usage: awk -v root="$PWD/" -f scripts/sanitizers/digest.awk REPORT...
# TSan starts its headline with "WARNING:", ASan with "==PID==ERROR:".
/^(==[0-9]+==)?(WARNING|ERROR): / { print; next }
# TSan indents its access, location and thread lines by two spaces; ASan starts them at the margin.
/^  [A-Z].*(by|at) / || /^  Location / || /^(READ|WRITE) of size|^(freed|previously allocated) by|^0x[0-9a-f]+ is located|^Thread T[0-9]+/ {
    print; frames = 0; own = 0; next
}
/^    #[0-9]+ / {
    frames++
    mine = root != "" && index($0, root) > 0 && $0 !~ /\/\.build[^\/]*\//
    if (frames == 1 || (mine && own < 3)) {
        line = $0
        sub(/ \(.*\+0x[0-9a-f]+\).*$/, "", line)
        print line
        if (mine) own++
    }
    next
}
/^SUMMARY: / { print }
