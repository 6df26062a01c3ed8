import './ui/app-shell';
