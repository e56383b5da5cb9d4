-- docs/decisions/performance.md, "Chained refresh": a rotation writes the family's sealed grace response
-- (about 2.4 KB: the whole token response, sealed). Rows over the default toast_tuple_target
-- (about 2 KB) have their largest value moved out of line, and a random-looking sealed value does
-- not compress: every rotation inserted two new chunks into the TOAST table and its index and
-- left the previous two dead (measured: 6.7 MB of TOAST for 457 families after 2,469 rotations),
-- so a family rotated a moment ago had dead chunks in the way of the next rotation until vacuum.
-- A row of up to 4 KB now stays whole on its heap page (fillfactor 50 leaves room for the next
-- version beside it, so the rotation stays a heap-only update). Applies to rows written from now
-- on; no rewrite, no lock beyond a moment's SHARE UPDATE EXCLUSIVE: safe while old servers run.
alter table refresh_families set (toast_tuple_target = 4080);
