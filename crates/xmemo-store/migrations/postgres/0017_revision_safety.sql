-- The safety scanner's verdict of each revision (issue #33): the whole report as JSON
-- (`safety`) and its verdict apart (`safety_verdict`: clean | suspicious | malicious), which
-- Level 0 filters on. NULL for revisions written before the scanner: `xmemo admin rescan`
-- fills them, and reads scan such a revision on the fly meanwhile.
ALTER TABLE revisions ADD COLUMN safety TEXT;
ALTER TABLE revisions ADD COLUMN safety_verdict TEXT;
