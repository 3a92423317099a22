import { saveOnlyRun } from "./saveImpl";

saveOnlyRun(true);
