import { restoreOnlyRun } from "./restoreImpl";

restoreOnlyRun(true);
