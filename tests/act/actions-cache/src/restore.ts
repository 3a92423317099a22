import { restoreRun } from "./restoreImpl";

restoreRun(true);
